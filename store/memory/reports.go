package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"

	chat "github.com/chatengine/chat"
)

// ---- reports ----

func cmpReport(a, b *chat.Report) int {
	if c := a.CreatedAt.Compare(b.CreatedAt.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.ReportID, b.ReportID)
}

func cpReport(r *chat.Report) *chat.Report {
	v := *r
	if r.Resolution != nil {
		res := *r.Resolution
		v.Resolution = &res
	}
	if r.ResolvedAt != nil {
		at := nt(*r.ResolvedAt)
		v.ResolvedAt = &at
	}
	v.CreatedAt = nt(r.CreatedAt)
	return &v
}

func openKey(r *chat.Report) openReportKey {
	return openReportKey{r.ReporterID, r.TargetType, r.TargetID}
}

// CreateReport implements chat.ReportStore.
func (t *tx) CreateReport(_ context.Context, r *chat.Report) error {
	if err := t.writable(); err != nil {
		return err
	}
	if _, ok := t.d.reports[r.ReportID]; ok {
		return chat.Errorf(chat.CodeConflict, "report %q already exists", r.ReportID)
	}
	v := cpReport(r)
	if v.State == chat.ReportOpen {
		if _, ok := t.d.openReports[openKey(v)]; ok {
			return chat.Errorf(chat.CodeConflict, "user %q already has an open report of %s %q", v.ReporterID, v.TargetType, v.TargetID)
		}
		setKey(t, t.d.openReports, openKey(v), v.ReportID)
	}
	setKey(t, t.d.reports, v.ReportID, v)
	sortedInsert(t, &t.d.reportOrder, v, cmpReport)
	return nil
}

// GetReport implements chat.ReportStore.
func (t *tx) GetReport(_ context.Context, reportID string) (*chat.Report, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	r, ok := t.d.reports[reportID]
	if !ok {
		return nil, chat.Errorf(chat.CodeNotFound, "report %q not found", reportID)
	}
	return cpReport(r), nil
}

// UpdateReport implements chat.ReportStore.
func (t *tx) UpdateReport(_ context.Context, r *chat.Report) error {
	if err := t.writable(); err != nil {
		return err
	}
	old, ok := t.d.reports[r.ReportID]
	if !ok {
		return chat.Errorf(chat.CodeNotFound, "report %q not found", r.ReportID)
	}
	v := cpReport(old)
	v.Note, v.State = r.Note, r.State
	if r.Resolution != nil {
		res := *r.Resolution
		v.Resolution = &res
	} else {
		v.Resolution = nil
	}
	v.ResolvedAt = nil
	if r.ResolvedAt != nil {
		at := nt(*r.ResolvedAt)
		v.ResolvedAt = &at
	}
	k := openKey(old)
	if old.State == chat.ReportOpen && v.State != chat.ReportOpen {
		delKey(t, t.d.openReports, k)
	}
	if old.State != chat.ReportOpen && v.State == chat.ReportOpen {
		if _, ok := t.d.openReports[k]; ok {
			return chat.Errorf(chat.CodeConflict, "user %q already has an open report of %s %q", v.ReporterID, v.TargetType, v.TargetID)
		}
		setKey(t, t.d.openReports, k, v.ReportID)
	}
	// Same (CreatedAt, ReportID): the new value takes the old one's
	// place in the order.
	sortedRemove(t, &t.d.reportOrder, old, cmpReport)
	sortedInsert(t, &t.d.reportOrder, v, cmpReport)
	setKey(t, t.d.reports, v.ReportID, v)
	return nil
}

// QueryReports implements chat.ReportStore.
func (t *tx) QueryReports(_ context.Context, f chat.ReportFilter) ([]*chat.Report, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	l := t.d.reportOrder
	var low, high func(*chat.Report) int
	// Newest first, as the audit log (see QueryAudit).
	if c := f.After; c != nil {
		cur := &chat.Report{CreatedAt: chat.NewTime(c.CreatedAt), ReportID: c.ReportID}
		high = func(r *chat.Report) int { return cmpReport(r, cur) }
	}
	if c := f.Before; c != nil {
		cur := &chat.Report{CreatedAt: chat.NewTime(c.CreatedAt), ReportID: c.ReportID}
		low = func(r *chat.Report) int { return cmpReport(r, cur) }
	}
	lo, hi := window(l, low, high)
	var out []*chat.Report
	walk(l, lo, hi, f.Before == nil, func(r *chat.Report) bool {
		if (f.State != "" && r.State != f.State) || (f.TargetType != "" && r.TargetType != f.TargetType) ||
			(f.ReporterID != "" && r.ReporterID != f.ReporterID) {
			return true
		}
		out = append(out, cpReport(r))
		return f.Limit <= 0 || len(out) < f.Limit
	})
	return out, nil
}

// ---- a user's data ----

// UserMessages implements chat.UserDataStore. The author's messages are
// kept in creation order, which is not always createdAt order, so one
// page reads every message of the author once (as SoftDeleteBatch).
func (t *tx) UserMessages(_ context.Context, userID string, after *chat.PurgeCursor, limit int) ([]*chat.Message, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	mine := t.d.byAuthor[userID]
	if mine == nil {
		return nil, nil
	}
	cmpMsg := func(a, b *msg) int {
		if c := cmp.Compare(a.created, b.created); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	}
	var cur *msg
	if after != nil {
		cur = &msg{created: ms(after.CreatedAt), id: after.MessageID}
	}
	var found []*msg
	for _, i := range *mine {
		m := t.d.allMsgs[i]
		if cur != nil && cmpMsg(m, cur) <= 0 {
			continue
		}
		found = append(found, m)
		if limit > 0 && len(found) >= 4*limit {
			slices.SortFunc(found, cmpMsg)
			found = found[:limit]
		}
	}
	slices.SortFunc(found, cmpMsg)
	if limit > 0 && len(found) > limit {
		found = found[:limit]
	}
	out := make([]*chat.Message, 0, len(found))
	for _, m := range found {
		out = append(out, t.d.message(m))
	}
	return out, nil
}

// UserReactions implements chat.UserDataStore. The memory store keeps no
// index of reactions by user: a page reads every reaction once.
func (t *tx) UserReactions(_ context.Context, userID string, after *chat.UserReactionCursor, limit int) ([]*chat.Reaction, error) {
	if err := t.readable(); err != nil {
		return nil, err
	}
	cmpKey := func(a, b reactKey) int {
		if c := strings.Compare(a.msg, b.msg); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	}
	var keys []reactKey
	for k := range t.d.reactions {
		if k.user != userID || after != nil && cmpKey(k, reactKey{msg: after.MessageID, name: after.ReactionName}) <= 0 {
			continue
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmpKey)
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	out := make([]*chat.Reaction, 0, len(keys))
	for _, k := range keys {
		out = append(out, cpReaction(t.d.reactions[k]))
	}
	return out, nil
}
