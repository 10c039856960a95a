package postgres

import (
	"context"
	"database/sql"
	"time"

	chat "github.com/chatengine/chat"
)

// PutTicket implements chat.TicketStore.
func (t *tx) PutTicket(ctx context.Context, tk *chat.StreamTicket) error {
	_, err := t.exec(ctx, `INSERT INTO {s}stream_tickets (hash, user_id, admin, expires_at, admin_name, token_hash, token_issued_at, token_expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		tk.Hash, tk.UserID, tk.Admin, timeArg(tk.ExpiresAt), tk.AdminName, bytesArg(tk.TokenHash), timePtrArg(tk.TokenIssuedAt), timePtrArg(tk.TokenExpiresAt))
	return err
}

// TakeTicket implements chat.TicketStore with DELETE ... RETURNING: of
// several transactions deleting the row at once, the first takes its row
// lock and the others, once it committed, find no row.
func (t *tx) TakeTicket(ctx context.Context, hash string) (*chat.StreamTicket, error) {
	tk := chat.StreamTicket{Hash: hash}
	var exp time.Time
	var iat, texp sql.NullTime
	err := t.queryRow(ctx, `DELETE FROM {s}stream_tickets WHERE hash = $1
		RETURNING user_id, admin, expires_at, admin_name, token_hash, token_issued_at, token_expires_at`,
		[]any{hash}, &tk.UserID, &tk.Admin, &exp, &tk.AdminName, &tk.TokenHash, &iat, &texp)
	if chat.ErrorCode(err) == chat.CodeNotFound {
		return nil, chat.Errorf(chat.CodeNotFound, "ticket not found")
	}
	if err != nil {
		return nil, err
	}
	tk.ExpiresAt = chat.NewTime(exp)
	tk.TokenIssuedAt, tk.TokenExpiresAt = ctp(iat), ctp(texp)
	if len(tk.TokenHash) == 0 {
		tk.TokenHash = nil
	}
	return &tk, nil
}

// deleteTicketsSQL deletes up to $2 tickets that expired before $1,
// through the primary key (deleteEventsSQL).
const deleteTicketsSQL = `DELETE FROM {s}stream_tickets WHERE hash = ANY (ARRAY(
		SELECT hash FROM {s}stream_tickets WHERE expires_at < $1 ORDER BY expires_at LIMIT $2))`

// DeleteTicketsBefore implements chat.TicketStore (deleteTicketsSQL).
func (t *tx) DeleteTicketsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	n, err := t.exec(ctx, deleteTicketsSQL, before.UTC(), limit)
	return int(n), err
}
