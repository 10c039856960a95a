package httpapi

import (
	"net/http"
	"time"

	chat "github.com/chatengine/chat"
)

// createReport serves POST /reports (ext, every caller): {targetType,
// targetId, reason, note?}.
func (h *handler) createReport(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	in := chat.CreateReportInput{TargetType: p.str("targetType"), TargetID: p.str("targetId"), Reason: p.str("reason"),
		Note: p.str("note")}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.CreateReport(r.Context(), actor(r), in)
	return h.reply(w, out, err)
}

// queryReports serves GET /reports (ext, admins): filters state,
// targetType and reporterId; options[limit] and options[token] page it.
func (h *handler) queryReports(w http.ResponseWriter, r *http.Request) error {
	p, err := h.decode(w, r)
	if err != nil {
		return err
	}
	opt := p.sub("options")
	q := chat.ReportQuery{State: p.str("state"), TargetType: p.str("targetType"), ReporterID: p.str("reporterId"),
		Limit: opt.integer("limit"), Token: opt.str("token")}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.QueryReports(r.Context(), actor(r), q)
	return h.reply(w, out, err)
}

// getReport serves GET /reports/{reportId} (ext, admins).
func (h *handler) getReport(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "reportId")
	if err != nil {
		return err
	}
	out, err := h.svc.GetReport(r.Context(), actor(r), id)
	return h.reply(w, out, err)
}

// resolveReport serves POST /reports/{reportId}/resolve (ext, admins):
// {action, channelId?}.
func (h *handler) resolveReport(w http.ResponseWriter, r *http.Request) error {
	id, p, err := h.pathAndParams(w, r, "reportId")
	if err != nil {
		return err
	}
	in := chat.ResolveReportInput{ReportID: id, Action: p.str("action"), ChannelID: p.str("channelId")}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.ResolveReport(r.Context(), actor(r), in)
	return h.reply(w, out, err)
}

// exportUser serves GET /users/{userId}/export (ext, admins): the user's
// data as one JSON document, streamed as the Service encodes it. Refusals
// come before the first byte, as ordinary errors; a failure after it
// aborts the response (the client sees the body end early, never a
// complete-looking document).
func (h *handler) exportUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "userId")
	if err != nil {
		return err
	}
	sw := &exportWriter{w: w, rc: http.NewResponseController(w), name: chat.SafeFileName(id + ".json")}
	if err := h.svc.ExportUser(r.Context(), actor(r), id, sw); err != nil {
		if !sw.started {
			return err
		}
		h.log.Error("httpapi: export failed midway", "requestId", RequestIDFrom(r.Context()), "userId", id, "error", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// exportStall is how long an export may wait for the client to take
// its next bytes. A large export outlasts the server's write timeout:
// while it keeps moving, each write extends its deadline instead.
const exportStall = 2 * time.Minute

// exportWriter sends the export's headers with its first bytes, and moves
// the connection's write deadline forward with every write.
type exportWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	name    string
	started bool
}

func (e *exportWriter) Write(b []byte) (int, error) {
	_ = e.rc.SetWriteDeadline(time.Now().Add(exportStall)) // unsupported writers keep the server's timeout
	if !e.started {
		e.started = true
		hd := e.w.Header()
		hd.Set("Content-Type", "application/json; charset=utf-8")
		hd.Set("Content-Disposition", contentDisposition("attachment", e.name))
		hd.Set("Cache-Control", "no-store")
		e.w.WriteHeader(http.StatusOK)
	}
	return e.w.Write(b)
}

// eraseUser serves POST /users/{userId}/erase (ext, admins).
func (h *handler) eraseUser(w http.ResponseWriter, r *http.Request) error {
	id, err := pathParam(r, "userId")
	if err != nil {
		return err
	}
	out, err := h.svc.EraseUser(r.Context(), actor(r), id)
	return h.reply(w, out, err)
}
