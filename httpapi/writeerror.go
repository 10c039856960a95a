package httpapi

import (
	"log/slog"
	"net/http"
)

// WriteError answers r with err exactly as the API's own handlers do: the
// error envelope of docs/api.md section 1 (Errors) with the status of err's code, 4xx
// messages shown as they are, anything else logged to log (with the
// request id, when the request went through the API's middleware) and
// answered with a generic message. It is meant for the few endpoints a host
// serves beside the API, so that their errors read like the API's. A nil
// log means slog.Default().
func WriteError(w http.ResponseWriter, r *http.Request, err error, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	(&handler{log: log}).writeError(w, r, err)
}
