package httpapi

import (
	"net/http"

	chat "github.com/chatengine/chat"
)

// queryRules serves GET /blacklist/records and GET /whitelist/records.
func (h *handler) queryRules(list chat.RuleList) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := h.decode(w, r)
		if err != nil {
			return err
		}
		ids := p.strs("regexs")
		if err := p.Err(); err != nil {
			return err
		}
		out, err := h.svc.QueryRules(r.Context(), actor(r), list, ids)
		return h.reply(w, out, err)
	}
}

// addRules serves POST /blacklist/records and POST /whitelist/records.
func (h *handler) addRules(list chat.RuleList) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := h.decode(w, r)
		if err != nil {
			return err
		}
		patterns, exact := p.strs("regexs"), p.boolean("isMatchExactWord")
		if err := p.Err(); err != nil {
			return err
		}
		out, err := h.svc.AddRules(r.Context(), actor(r), list, patterns, exact)
		return h.reply(w, out, err)
	}
}

// deleteRules serves DELETE /blacklist/records and DELETE
// /whitelist/records.
func (h *handler) deleteRules(list chat.RuleList) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := h.decode(w, r)
		if err != nil {
			return err
		}
		ids := p.strs("ruleIds")
		if err := p.Err(); err != nil {
			return err
		}
		return h.done(w, h.svc.DeleteRules(r.Context(), actor(r), list, ids))
	}
}

// updateRule serves PUT /blacklist/records/{ruleId} and PUT
// /whitelist/records/{ruleId}: the path names the current entry, the body
// field ruleId the new one.
func (h *handler) updateRule(list chat.RuleList) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		old, err := pathParam(r, "ruleId")
		if err != nil {
			return err
		}
		p, err := h.decode(w, r)
		if err != nil {
			return err
		}
		newID, exact := p.str("ruleId"), p.boolean("isMatchExactWord")
		if err := p.Err(); err != nil {
			return err
		}
		out, err := h.svc.UpdateRule(r.Context(), actor(r), list, old, newID, exact)
		return h.reply(w, out, err)
	}
}
