package client

import (
	"context"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/url"

	chat "github.com/chatengine/chat"
)

// CreateReportRequest is a report of a message or a user.
type CreateReportRequest struct {
	// TargetType is chat.ReportTargetMessage or chat.ReportTargetUser.
	TargetType string `json:"targetType"`
	TargetID   string `json:"targetId"`
	Reason     string `json:"reason"`
	Note       string `json:"note,omitempty"`
}

// CreateReport files a report as the client's caller (POST /reports, ext,
// every caller; a message only where the caller may read it).
func (c *Client) CreateReport(ctx context.Context, req CreateReportRequest) (*chat.Report, error) {
	var out chat.ReportList
	if err := c.do(ctx, http.MethodPost, "/reports", nil, req, &out); err != nil {
		return nil, err
	}
	return firstReport(&out)
}

func firstReport(l *chat.ReportList) (*chat.Report, error) {
	if len(l.Reports) == 0 {
		return nil, errors.New("chat api: the response holds no report")
	}
	return &l.Reports[0], nil
}

// QueryReportsRequest selects reports, newest first. Each non-empty filter
// must match exactly.
type QueryReportsRequest struct {
	// State is chat.ReportOpen or chat.ReportResolved.
	State string
	// TargetType is chat.ReportTargetMessage or chat.ReportTargetUser.
	TargetType string
	ReporterID string
	// Limit is the page size (default 10, at most 100).
	Limit int
	// Token continues a query (paging.next or paging.previous).
	Token string
}

// QueryReports lists reports with the users and messages they reference
// (GET /reports, ext, admins).
func (c *Client) QueryReports(ctx context.Context, req QueryReportsRequest) (*chat.ReportList, error) {
	q := query{}
	q.str("state", req.State)
	q.str("targetType", req.TargetType)
	q.str("reporterId", req.ReporterID)
	q.int("options[limit]", req.Limit)
	q.str("options[token]", req.Token)
	var out chat.ReportList
	return &out, c.do(ctx, http.MethodGet, "/reports", url.Values(q), nil, &out)
}

// Reports iterates over every report req selects, newest first, following
// paging.next.
func (c *Client) Reports(ctx context.Context, req QueryReportsRequest) iter.Seq2[chat.Report, error] {
	return pages(func(token string) ([]chat.Report, *chat.Paging, error) {
		r := req
		if token != "" {
			r.Token = token
		}
		out, err := c.QueryReports(ctx, r)
		if err != nil {
			return nil, nil, err
		}
		return out.Reports, out.Paging, nil
	})
}

// GetReport reads one report (GET /reports/{reportId}, ext, admins).
func (c *Client) GetReport(ctx context.Context, reportID string) (*chat.ReportList, error) {
	var out chat.ReportList
	return &out, c.do(ctx, http.MethodGet, "/reports/"+esc(reportID), nil, nil, &out)
}

// ResolveReport resolves an open report (POST /reports/{reportId}/resolve,
// ext, admins): action is one of chat.ReportActions; channelID names the
// channel of a banUser of a user report (empty otherwise).
func (c *Client) ResolveReport(ctx context.Context, reportID, action, channelID string) (*chat.Report, error) {
	in := struct {
		Action    string `json:"action"`
		ChannelID string `json:"channelId,omitempty"`
	}{action, channelID}
	var out chat.ReportList
	if err := c.do(ctx, http.MethodPost, "/reports/"+esc(reportID)+"/resolve", nil, in, &out); err != nil {
		return nil, err
	}
	return firstReport(&out)
}

// ExportUser copies the JSON export of a user's data (GET
// /users/{userId}/export, ext, admins) to w as the server streams it. The
// Client's timeout does not apply (an export of a large account takes
// long); ctx bounds it. An export cut short by the server ends in an
// error (the body ends early).
func (c *Client) ExportUser(ctx context.Context, userID string, w io.Writer) error {
	resp, err := c.send(ctx, http.MethodGet, c.endpoint("/users/"+esc(userID)+"/export", nil), nil, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// EraseUser erases a user's data and keeps its id, anonymized (POST
// /users/{userId}/erase, ext, admins); see chat.Service.EraseUser.
func (c *Client) EraseUser(ctx context.Context, userID string) (*chat.EraseResult, error) {
	var out chat.EraseResult
	return &out, c.do(ctx, http.MethodPost, "/users/"+esc(userID)+"/erase", nil, nil, &out)
}
