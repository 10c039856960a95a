package sqlite

import (
	"bytes"
	"context"
	"database/sql/driver"
	"strings"
)

// Lookups remembered in a write transaction.
//
// A post's transaction reads the author, the channel, the author's
// membership and roles; a commit group holds several posts, often to one
// channel by few authors, and every read of a row runs SQLite's statement
// and the driver's conversion of each column again. In a write transaction
// nothing but the transaction itself can change the database (the write
// lock is held from BEGIN IMMEDIATE to COMMIT, across processes too), so
// the rows such a lookup returned stay what the database holds until a
// statement of the transaction writes their table. memoKeyed keeps the
// driver's values of those lookups (Store.memo) and answers a repeated one
// by scanning them again (each caller gets its own values); forgetReads,
// called for every statement a transaction runs, drops what a write may
// have changed: the rows of the tables the statement names, and all of
// them for a DELETE or a REPLACE (a foreign key may cascade into another
// table) or a schema change. The memo is emptied when a write transaction
// begins and when a savepoint is rolled back (as Store.vers is).

// Tables whose rows memoKeyed remembers, as bits.
const (
	memoChannels = 1 << iota
	memoChannelUsers
	memoUsers
	memoRoles
)

// memoTables are the tables' names, as statements name them.
var memoTables = [...]struct {
	name string
	bit  uint8
}{
	{"channels", memoChannels},
	{"channel_users", memoChannelUsers},
	{"users", memoUsers}, // also matches channel_users: dropped together
	{"roles", memoRoles},
}

type memoKey struct {
	q      string
	a0, a1 string
}

type memoEntry struct {
	tables uint8
	rows   [][]driver.Value
}

// memoAll is what a statement that may change any table writes (see
// writesOf).
const memoAll = 0xff

// writesOf reads in statement q, not a SELECT, the tables whose remembered
// rows it may change: those it names, or memoAll.
func writesOf(q string) uint8 {
	for _, w := range [...]string{"DELETE", "REPLACE", "DROP", "ALTER", "PRAGMA"} {
		if strings.Contains(q, w) {
			return memoAll
		}
	}
	var bits uint8
	for _, t := range memoTables {
		if strings.Contains(q, t.name) {
			bits |= t.bit
		}
	}
	return bits
}

// memoWritesMax bounds Store.memoWrites (the store's statements are
// constants, or built from a bounded number of parts).
const memoWritesMax = 4096

// forgetReads drops the remembered rows that statement q may change.
// Called before q runs, for every statement of a write transaction. What
// a statement's text names is read once (Store.memoWrites): reading it
// again took about 0.75 µs a statement.
func (s *Store) forgetReads(q string) {
	if len(s.memo) == 0 || strings.HasPrefix(q, "SELECT ") {
		return
	}
	bits, ok := s.memoWrites[q]
	if !ok {
		bits = writesOf(q)
		if s.memoWrites == nil {
			s.memoWrites = make(map[string]uint8)
		}
		if len(s.memoWrites) < memoWritesMax {
			s.memoWrites[q] = bits
		}
	}
	switch bits {
	case 0:
		return
	case memoAll:
		clear(s.memo)
		return
	}
	for k, e := range s.memo {
		if e.tables&bits != 0 {
			delete(s.memo, k)
		}
	}
}

// memoKeyed is keyed for a lookup, by one or two string keys, of rows of
// the tables named by tables (and no other), remembered for the rest of a
// write transaction (see above).
func memoKeyed[T any](t *tx, ctx context.Context, tables uint8, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	k, ok := t.memoKey(q, args)
	if !ok {
		return keyed(t, ctx, scan, q, args...)
	}
	if _, err := t.ctx(ctx); err != nil {
		return nil, err
	}
	if e, ok := t.s.memo[k]; ok {
		out := make([]T, 0, len(e.rows))
		for _, r := range e.rows {
			v, err := scan(driverRow(r))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	var rows [][]driver.Value
	out, err := rawList(t, ctx, func(v []driver.Value) (T, error) {
		r := make([]driver.Value, len(v))
		for i, x := range v {
			if b, ok := x.([]byte); ok {
				x = bytes.Clone(b)
			}
			r[i] = x
		}
		rows = append(rows, r)
		return scan(driverRow(v))
	}, scan, q, args...)
	if err != nil {
		return nil, err
	}
	t.s.remember(k, memoEntry{tables: tables, rows: rows})
	return out, nil
}

// memoRows returns the driver's values that a write transaction
// remembers for lookup q with args (not to be changed: clone a row before
// changing it), and whether it remembers any.
func memoRows(t *tx, q string, args ...any) ([][]driver.Value, bool) {
	k, ok := t.memoKey(q, args)
	if !ok {
		return nil, false
	}
	e, ok := t.s.memo[k]
	return e.rows, ok
}

// memoRemember makes a write transaction remember rows (the driver's
// values, of the tables named by tables) as what lookup q with args
// returns: for a caller that knows what its write did to rows read
// before it.
func memoRemember(t *tx, tables uint8, rows [][]driver.Value, q string, args ...any) {
	if k, ok := t.memoKey(q, args); ok {
		t.s.remember(k, memoEntry{tables: tables, rows: rows})
	}
}

// memoKey is the memo's key of lookup q with args in t; ok is false when
// t remembers nothing (a read transaction, or one not on a store
// connection) or the lookup's arguments are not at most two strings.
func (t *tx) memoKey(q string, args []any) (memoKey, bool) {
	k, ok := memoKeyOf(q, args)
	_, onConn := t.db.(*conn)
	return k, ok && t.write && onConn
}

// remember stores e under k in the write transaction's memo.
func (s *Store) remember(k memoKey, e memoEntry) {
	if s.memo == nil {
		s.memo = make(map[memoKey]memoEntry)
	}
	s.memo[k] = e
}

// memoKeyOf is the memo's key of statement q with args; ok is false
// unless args are at most two strings.
func memoKeyOf(q string, args []any) (memoKey, bool) {
	k := memoKey{q: q}
	for i, a := range args {
		s, ok := a.(string)
		if !ok || i > 1 {
			return k, false
		}
		if i == 0 {
			k.a0 = s
		} else {
			k.a1 = s
		}
	}
	return k, true
}
