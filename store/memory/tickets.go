package memory

import (
	"bytes"
	"context"
	"time"

	chat "github.com/chatengine/chat"
)

// ---- stream tickets ----

// PutTicket implements chat.TicketStore.
func (t *tx) PutTicket(_ context.Context, tk *chat.StreamTicket) error {
	if err := t.writable(); err != nil {
		return err
	}
	if _, ok := t.d.tickets[tk.Hash]; ok {
		return conflict("ticket already exists")
	}
	v := *tk
	v.ExpiresAt = nt(tk.ExpiresAt)
	v.TokenHash = bytes.Clone(tk.TokenHash)
	v.TokenIssuedAt, v.TokenExpiresAt = ntp(tk.TokenIssuedAt), ntp(tk.TokenExpiresAt)
	setKey(t, t.d.tickets, tk.Hash, &v)
	return nil
}

// TakeTicket implements chat.TicketStore; the store's write lock makes
// the take single.
func (t *tx) TakeTicket(_ context.Context, hash string) (*chat.StreamTicket, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	tk, ok := t.d.tickets[hash]
	if !ok {
		return nil, chat.Errorf(chat.CodeNotFound, "ticket not found")
	}
	delKey(t, t.d.tickets, hash)
	v := *tk
	return &v, nil
}

// DeleteTicketsBefore implements chat.TicketStore.
func (t *tx) DeleteTicketsBefore(_ context.Context, before time.Time, limit int) (int, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	n := 0
	for h, tk := range t.d.tickets {
		if limit > 0 && n >= limit {
			break
		}
		if tk.ExpiresAt.Before(before) {
			delKey(t, t.d.tickets, h)
			n++
		}
	}
	return n, nil
}
