package sqlite

import (
	"context"
	"database/sql"
	"time"

	chat "github.com/chatengine/chat"
)

// PutTicket implements chat.TicketStore.
func (t *tx) PutTicket(ctx context.Context, tk *chat.StreamTicket) error {
	_, err := t.exec(ctx, `INSERT INTO stream_tickets (hash, user_id, admin, expires_at, admin_name, token_hash, token_issued_at, token_expires_at)
		VALUES (?,?,?,?,?,?,?,?)`,
		tk.Hash, tk.UserID, tk.Admin, ms(tk.ExpiresAt), tk.AdminName, ticketHashArg(tk.TokenHash), msp(tk.TokenIssuedAt), msp(tk.TokenExpiresAt))
	return asConflict(err, "ticket", "")
}

// TakeTicket implements chat.TicketStore: one DELETE ... RETURNING, in
// SQLite's single write transaction.
func (t *tx) TakeTicket(ctx context.Context, hash string) (*chat.StreamTicket, error) {
	tk := chat.StreamTicket{Hash: hash}
	var exp int64
	var iat, texp sql.NullInt64
	err := t.row(ctx, `DELETE FROM stream_tickets WHERE hash = ?
		RETURNING user_id, admin, expires_at, admin_name, token_hash, token_issued_at, token_expires_at`,
		[]any{hash}, &tk.UserID, &tk.Admin, &exp, &tk.AdminName, &tk.TokenHash, &iat, &texp)
	if err != nil {
		return nil, asNotFound(err, "ticket", "")
	}
	tk.ExpiresAt = fromMs(exp)
	tk.TokenIssuedAt, tk.TokenExpiresAt = fromMsp(iat), fromMsp(texp)
	if len(tk.TokenHash) == 0 {
		tk.TokenHash = nil
	}
	return &tk, nil
}

// DeleteTicketsBefore implements chat.TicketStore.
func (t *tx) DeleteTicketsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	n, err := t.execN(ctx, `DELETE FROM stream_tickets WHERE hash IN
		(SELECT hash FROM stream_tickets WHERE expires_at < ? ORDER BY expires_at LIMIT `+limitParam+`)`,
		ms(chat.NewTime(before)), limitArg(limit))
	return int(n), err
}

// ticketHashArg stores a ticket's token hash, empty when it has none (the
// column is NOT NULL).
func ticketHashArg(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
