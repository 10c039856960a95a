package console

import (
	"context"
	"net/http"
	"strconv"

	chat "github.com/chatengine/chat"
)

// userDataRoutes serves the "User's data" card of a user's page: the
// download of Service.ExportUser and the confirmed Service.EraseUser.
func (h *handler) userDataRoutes(rt *router) {
	rt.get("/users/{id}/export", h.exportUser)
	rt.post("/users/{id}/erase", h.eraseUser)
}

// exportUser sends the user's export as a download, streamed as the
// Service writes it. A refusal (before the first byte) goes back to the
// user's page with the reason; a failure midway ends the download early.
func (h *handler) exportUser(q *req) {
	id := q.pathID("id")
	w := &downloadWriter{w: q.w, name: chat.SafeFileName(id + ".json")}
	if err := h.svc.ExportUser(q.r.Context(), q.actor(), id, w); err != nil {
		if !w.started {
			q.fail("/users/"+esc(id), h.human(err))
			return
		}
		panic(http.ErrAbortHandler)
	}
}

// downloadWriter sends the download's headers with its first bytes.
type downloadWriter struct {
	w       http.ResponseWriter
	name    string
	started bool
}

func (d *downloadWriter) Write(b []byte) (int, error) {
	if !d.started {
		d.started = true
		hd := d.w.Header()
		hd.Set("Content-Type", "application/json; charset=utf-8")
		hd.Set("Content-Disposition", `attachment; filename="`+d.name+`"`)
		hd.Set("Cache-Control", "no-store")
		d.w.WriteHeader(http.StatusOK)
	}
	return d.w.Write(b)
}

// eraseUser erases the user's data once confirmed. Like a purge it runs
// to the end when the browser stops waiting.
func (h *handler) eraseUser(q *req) {
	id := q.pathID("id")
	back := "/users/" + esc(id)
	if !q.confirmed() {
		q.fail(back, "Erasing cannot be undone: tick the box to confirm.")
		return
	}
	res, err := h.svc.EraseUser(context.WithoutCancel(q.r.Context()), q.actor(), id)
	text := ""
	if err == nil {
		text = "Erased the data of " + id + ": " + plural(res.DeletedMessages, "message") + " deleted, " +
			plural(res.RemovedReactions, "reaction") + " removed, profile anonymized."
	}
	q.done(back, err, text)
}

// plural writes n with its noun, singular for 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
