package console

import (
	"net/http"

	chat "github.com/chatengine/chat"
)

// checkView is the "Test a message" box: the form's values and, once
// tested, the verdict.
type checkView struct {
	UserID, ChannelID, Text string
	Tested                  bool
	Refused                 bool
	Verdict                 string   // "Allowed: …" or "Refused: <the API's message>."
	Named                   []string // the rules or links the refusal names
}

// checkMessage answers the "Test a message" box of the rules page: a dry
// run of posting the text as the user (in the channel, when one is given)
// through Service.CheckMessage, which applies every rule that posting
// would and changes nothing. Without a user id the text is tested as
// posted by a plain member without roles, and the verdict says so.
func (h *handler) checkMessage(q *req) {
	v := h.rulesData(q)
	c := &v.Check
	c.UserID, c.ChannelID, c.Text = q.form("userId"), q.form("channelId"), q.r.PostForm.Get("text")
	who := c.UserID
	if who == "" {
		who = "a plain member without roles"
	}
	status := http.StatusOK
	switch {
	case c.Text == "":
		c.Refused, c.Verdict, status = true, "Enter the text of the message to test.", http.StatusBadRequest
	default:
		c.Tested = true
		res, err := h.svc.CheckMessage(q.r.Context(), q.actor(), c.UserID, chat.CreateMessageInput{
			ChannelID: c.ChannelID, Type: chat.MessageTypeText, Data: map[string]any{"text": c.Text},
		})
		switch {
		case err != nil:
			c.Refused, c.Verdict, status = true, "The test could not run: "+h.human(err), http.StatusBadRequest
		case res.Allowed:
			where := "in any channel, as far as the blacklist and the whitelist go"
			if c.ChannelID != "" {
				where = "in " + c.ChannelID
			}
			c.Verdict = "Allowed: " + who + " could post this message " + where + "."
		default:
			c.Refused, c.Verdict = true, "Refused: "+res.Message+"."
			if c.UserID == "" {
				c.Verdict += " (Tested as " + who + ".)"
			}
			for _, d := range res.Detail {
				switch d := d.(type) {
				case chat.RuleRef:
					c.Named = append(c.Named, "blacklist rule "+d.RuleID)
				case chat.RefusedLink:
					c.Named = append(c.Named, "link not allowed by the whitelist: "+d.URL)
				}
			}
		}
	}
	q.render(status, "rules", "rules", "Blacklist & whitelist", v)
}
