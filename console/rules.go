package console

import (
	"net/http"
	"net/url"

	chat "github.com/chatengine/chat"
	"github.com/chatengine/chat/webhook"
)

// rulesRoutes serves the blacklist and the whitelist, and the "Test a
// message" box (a dry run, see check.go: nothing is posted).
func (h *handler) rulesRoutes(rt *router) {
	rt.get("/rules", h.rules)
	rt.post("/rules/{list}/add", h.ruleAction(func(q *req, l chat.RuleList) (string, error) {
		ps := lines(q.r.PostForm.Get("patterns"))
		if len(ps) == 0 {
			return "", chat.InvalidField("regexs", "enter at least one word, URL or pattern")
		}
		_, err := h.svc.AddRules(q.r.Context(), q.actor(), l, ps, q.form("exact") == "yes")
		return "Added to the " + string(l) + ".", err
	}))
	rt.post("/rules/{list}/delete", h.ruleAction(func(q *req, l chat.RuleList) (string, error) {
		id := q.r.PostForm.Get("ruleId")
		return "Removed from the " + string(l) + ".", h.svc.DeleteRules(q.r.Context(), q.actor(), l, []string{id})
	}))
	rt.post("/rules/{list}/update", h.ruleAction(func(q *req, l chat.RuleList) (string, error) {
		_, err := h.svc.UpdateRule(q.r.Context(), q.actor(), l, q.r.PostForm.Get("ruleId"), q.r.PostForm.Get("newRuleId"), q.form("exact") == "yes")
		return "Entry updated.", err
	}))
	rt.post("/rules/test", h.checkMessage)
}

func (h *handler) ruleAction(fn func(q *req, l chat.RuleList) (string, error)) func(q *req) {
	return func(q *req) {
		l := chat.RuleList(q.pathID("list"))
		if l != chat.Blacklist && l != chat.Whitelist {
			http.NotFound(q.w, q.r)
			return
		}
		msg, err := fn(q, l)
		q.done("/rules", err, msg)
	}
}

// ruleGroup is one list's entries.
type ruleGroup struct {
	List  chat.RuleList
	Rules []chat.Rule
}

type rulesView struct {
	Black, White ruleGroup
	Error        string
	Check        checkView
	Hook         hookView
}

// hookView is the pre-send hook's help on the rules page: whether one is
// configured and, if so, its endpoint's host (never the whole URL, which
// may carry a token, nor the secret), timeout and policy.
type hookView struct {
	Configured    bool
	Host          string
	Timeout       string
	RejectOnError bool
}

func (h *handler) hookData() hookView {
	c := h.cfg.PreSendHook
	if c == nil {
		return hookView{}
	}
	v := hookView{Configured: true, RejectOnError: c.RejectOnError}
	if u, err := url.Parse(c.URL); err == nil {
		v.Host = u.Host
	}
	t := c.Timeout
	if t <= 0 {
		t = webhook.DefaultPreSendTimeout
	}
	v.Timeout = t.String()
	return v
}

func (h *handler) rulesData(q *req) rulesView {
	v := rulesView{Black: ruleGroup{List: chat.Blacklist}, White: ruleGroup{List: chat.Whitelist}, Hook: h.hookData()}
	for _, g := range []*ruleGroup{&v.Black, &v.White} {
		if rr, err := h.svc.QueryRules(q.r.Context(), q.actor(), g.List, nil); err == nil {
			g.Rules = rr.Records
		} else {
			v.Error = h.human(err)
		}
	}
	return v
}

func (h *handler) rules(q *req) {
	q.render(http.StatusOK, "rules", "rules", "Blacklist & whitelist", h.rulesData(q))
}
