package client

import (
	"context"
	"net/http"
	"net/url"

	chat "github.com/chatengine/chat"
)

func rulesPath(list chat.RuleList) string { return "/" + string(list) + "/records" }

// QueryRules lists the records of a list (chat.Blacklist or
// chat.Whitelist); with ids only those (GET /blacklist/records, GET
// /whitelist/records).
func (c *Client) QueryRules(ctx context.Context, list chat.RuleList, ids []string) (*chat.RuleRecords, error) {
	q := query{}
	q.strs("regexs", ids)
	var out chat.RuleRecords
	return &out, c.do(ctx, http.MethodGet, rulesPath(list), url.Values(q), nil, &out)
}

// AddRules adds patterns to a list; isMatchExactWord applies to the
// blacklist only (POST /blacklist/records, POST /whitelist/records).
func (c *Client) AddRules(ctx context.Context, list chat.RuleList, patterns []string, isMatchExactWord bool) (*chat.RuleRecords, error) {
	in := map[string]any{"regexs": patterns}
	if list == chat.Blacklist {
		in["isMatchExactWord"] = isMatchExactWord
	}
	var out chat.RuleRecords
	return &out, c.do(ctx, http.MethodPost, rulesPath(list), nil, in, &out)
}

// DeleteRules deletes records by id (DELETE /blacklist/records, DELETE
// /whitelist/records).
func (c *Client) DeleteRules(ctx context.Context, list chat.RuleList, ruleIDs []string) error {
	return c.action(ctx, http.MethodDelete, rulesPath(list), map[string]any{"ruleIds": ruleIDs})
}

// UpdateRule renames the record ruleID to newRuleID, sets
// isMatchExactWord (blacklist only) and returns the record (PUT
// /blacklist/records/{ruleId}, PUT /whitelist/records/{ruleId}).
func (c *Client) UpdateRule(ctx context.Context, list chat.RuleList, ruleID, newRuleID string, isMatchExactWord bool) (*chat.Rule, error) {
	in := map[string]any{"ruleId": newRuleID}
	if list == chat.Blacklist {
		in["isMatchExactWord"] = isMatchExactWord
	}
	var out chat.RuleRecords
	if err := c.do(ctx, http.MethodPut, rulesPath(list)+"/"+esc(ruleID), nil, in, &out); err != nil {
		return nil, err
	}
	if len(out.Records) != 1 {
		return nil, errCount("rule", len(out.Records))
	}
	r := out.Records[0]
	r.List = list
	return &r, nil
}
