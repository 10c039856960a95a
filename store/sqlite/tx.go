package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	chat "github.com/chatengine/chat"
)

// dbtx is what a transaction runs statements on: the write connection
// (inside the writer's BEGIN IMMEDIATE) or a read pool *sql.Tx.
type dbtx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// tx implements chat.Tx.
type tx struct {
	s      *Store
	db     dbtx
	write  bool
	done   atomic.Bool
	signal int // signal kinds to send after commit (sigDeliveries, sigEvents)
	// events are those appended, for the store's recent events once the
	// transaction committed (write transactions only).
	events []*chat.Event
	// deferred is what the transaction changed in the store's deferred
	// deliveries (deferred.go), nil when nothing.
	deferred *deferredTx
}

var _ chat.Tx = (*tx)(nil)

var errTxDone = &chat.Error{Code: chat.CodeInternal, Message: "sqlite: transaction used after its function returned"}

func (t *tx) finish() { t.done.Store(true) }

// forget drops, in a write transaction, the remembered lookups that
// statement q may change (see memo.go).
func (t *tx) forget(q string) {
	if t.write {
		t.s.forgetReads(q)
	}
}

// ctx checks that the transaction is usable and returns the context to run
// a statement with. Write statements run with a context that is never
// cancelled: interrupting a write statement may make SQLite roll back the
// whole transaction, which in a group commit holds other callers' writes.
// The caller's ctx is checked before each statement instead.
func (t *tx) ctx(ctx context.Context) (context.Context, error) {
	if t.done.Load() {
		return nil, errTxDone
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if t.write {
		return context.Background(), nil
	}
	return ctx, nil
}

func (t *tx) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	c, err := t.ctx(ctx)
	if err != nil {
		return nil, err
	}
	t.forget(q)
	if dbc, ok := t.db.(*conn); ok {
		// On the driver connection, as rawList runs its queries.
		named, err := driverArgs(args)
		if err != nil {
			return nil, err
		}
		var r driver.Result
		err = dbc.Raw(func(dc any) error {
			st, err := dbc.prepared(dc, q)
			if err != nil {
				return err
			}
			if se, ok := st.(driver.StmtExecContext); ok && st.NumInput() == len(named) {
				r, err = se.ExecContext(c, named)
				return err
			}
			ec, ok := dc.(driver.ExecerContext)
			if !ok {
				return &chat.Error{Code: chat.CodeInternal, Message: "sqlite: driver connection cannot exec"}
			}
			r, err = ec.ExecContext(c, q, named)
			return err
		})
		return r, t.err(ctx, err)
	}
	r, err := t.db.ExecContext(c, q, args...)
	return r, t.err(ctx, err)
}

// execN runs a statement and returns the number of rows it changed.
func (t *tx) execN(ctx context.Context, q string, args ...any) (int64, error) {
	r, err := t.exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return n, translate(err)
}

func (t *tx) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	c, err := t.ctx(ctx)
	if err != nil {
		return nil, err
	}
	t.forget(q)
	rows, err := t.db.QueryContext(c, q, args...)
	return rows, t.err(ctx, err)
}

// quickCtx is t.ctx for a statement whose work is bounded by its keys (a
// lookup by primary or unique key, a short list of keys, one index range
// with a small LIMIT): it runs to its end without watching ctx, which is
// checked before it starts. A statement with a cancellable context costs
// database/sql a goroutine (to close the rows when ctx ends) and the driver
// a context.AfterFunc, several times what such a lookup itself costs;
// statements that may scan without bound (filters, searches, counts over a
// range) keep the caller's context and stop when it ends.
func (t *tx) quickCtx(ctx context.Context) (context.Context, error) {
	if _, err := t.ctx(ctx); err != nil {
		return nil, err
	}
	return context.Background(), nil
}

// row runs a query expected to return one row and scans it with dest.
// No row is CodeNotFound. Every caller selects by key, so the statement
// runs with quickCtx.
func (t *tx) row(ctx context.Context, q string, args []any, dest ...any) error {
	if _, ok := t.db.(*conn); ok {
		// On a store connection, through rawList (see keyed).
		found := false
		_, err := rawList(t, ctx, func(v []driver.Value) (struct{}, error) {
			if found {
				return struct{}{}, nil // QueryRow scans the first row only
			}
			found = true
			return struct{}{}, driverRow(v).Scan(dest...)
		}, nil, q, args...)
		if err == nil && !found {
			err = sql.ErrNoRows
		}
		return t.err(ctx, err)
	}
	c, err := t.quickCtx(ctx)
	if err != nil {
		return err
	}
	t.forget(q)
	return t.err(ctx, t.db.QueryRowContext(c, q, args...).Scan(dest...))
}

// err translates a statement's error; when the caller's context ended,
// its error is returned instead of the driver's "interrupted".
func (t *tx) err(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return translate(err)
}

// list runs a query and collects one value per row with scan.
func list[T any](t *tx, ctx context.Context, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return collect(t, ctx, rows, scan)
}

// keyed is list for a statement bounded by its keys (see quickCtx). On a
// store connection it runs through rawList, each row scanned from the
// driver's values (driverRow): a lookup by key costs database/sql about as
// much again as the driver and SQLite, and a post's transaction makes
// about ten of them on the one writer.
func keyed[T any](t *tx, ctx context.Context, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	if _, ok := t.db.(*conn); ok {
		return rawList(t, ctx, func(v []driver.Value) (T, error) { return scan(driverRow(v)) }, scan, q, args...)
	}
	return keyedSQL(t, ctx, scan, q, args...)
}

// keyedSQL is keyed through database/sql, for a transaction on anything but
// a store connection (the statement recorder of the query plan test).
func keyedSQL[T any](t *tx, ctx context.Context, scan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	c, err := t.quickCtx(ctx)
	if err != nil {
		return nil, err
	}
	t.forget(q)
	rows, err := t.db.QueryContext(c, q, args...)
	if err != nil {
		return nil, t.err(ctx, err)
	}
	return collect(t, ctx, rows, scan)
}

// rawList is keyed for the hot paths: the statement runs on the driver
// connection directly, prepared once (conn.prepared), and
// each row's values go to scan as the driver returns them, without
// database/sql's Rows and its conversion of every column into a
// destination (about a tenth of a page read's CPU). Arguments are
// converted as database/sql converts them for a driver without a
// converter of its own (driver.DefaultParameterConverter). A transaction
// on anything but a store connection (the statement recorder of the query
// plan test) goes through database/sql with rowScan.
func rawList[T any](t *tx, ctx context.Context, scan func([]driver.Value) (T, error), rowScan func(scanner) (T, error), q string, args ...any) ([]T, error) {
	dbc, ok := t.db.(*conn)
	if !ok {
		return keyedSQL(t, ctx, rowScan, q, args...)
	}
	c, err := t.quickCtx(ctx)
	if err != nil {
		return nil, err
	}
	t.forget(q)
	named, err := driverArgs(args)
	if err != nil {
		return nil, err
	}
	var out []T
	err = dbc.Raw(func(dc any) error {
		st, err := dbc.prepared(dc, q)
		if err != nil {
			return err
		}
		var rows driver.Rows
		if sq, ok := st.(driver.StmtQueryContext); ok && st.NumInput() == len(named) {
			rows, err = sq.QueryContext(c, named)
		} else if qc, ok := dc.(driver.QueryerContext); ok {
			rows, err = qc.QueryContext(c, q, named)
		} else {
			return &chat.Error{Code: chat.CodeInternal, Message: "sqlite: driver connection cannot query"}
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		vals := make([]driver.Value, len(rows.Columns()))
		for {
			if err := rows.Next(vals); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			v, err := scan(vals)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
	})
	return out, t.err(ctx, err)
}

// driverArgs converts a statement's arguments for the driver as
// database/sql does for a driver without a converter of its own
// (driver.DefaultParameterConverter).
func driverArgs(args []any) ([]driver.NamedValue, error) {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		switch x := a.(type) {
		case string, int64, []byte, nil:
		case int:
			a = int64(x)
		default:
			var err error
			if a, err = driver.DefaultParameterConverter.ConvertValue(a); err != nil {
				return nil, &chat.Error{Code: chat.CodeInternal, Message: fmt.Sprintf("sqlite: argument %d: %v", i+1, err)}
			}
		}
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return named, nil
}

func collect[T any](t *tx, ctx context.Context, rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, t.err(ctx, err)
		}
		out = append(out, v)
	}
	return out, t.err(ctx, rows.Err())
}

// scanner is *sql.Row, *sql.Rows or driverRow.
type scanner interface{ Scan(dest ...any) error }

// driverRow is one row of a statement run through rawList, as the driver
// returned it: SQLite's values are int64, float64, string, []byte or nil.
// Scan stores them in the destinations the store's scan functions use as
// database/sql's Rows.Scan does: the usual pairs (a string into a string,
// an integer into an integer) directly, every other pair through
// database/sql's own conversion (sql.Null[T].Scan); a []byte destination
// gets a copy.
type driverRow []driver.Value

func (r driverRow) Scan(dest ...any) error {
	if len(dest) != len(r) {
		return fmt.Errorf("sqlite: %d destinations for %d columns", len(dest), len(r))
	}
	for i, d := range dest {
		if err := scanValue(d, r[i]); err != nil {
			return fmt.Errorf("sqlite: column %d: %w", i, err)
		}
	}
	return nil
}

// scanValue stores the driver value v in dest (see driverRow).
func scanValue(dest any, v driver.Value) error {
	switch d := dest.(type) {
	case *string:
		if x, ok := v.(string); ok {
			*d = x
			return nil
		}
		return convertValue(d, v)
	case *[]byte:
		switch x := v.(type) {
		case []byte:
			*d = bytes.Clone(x)
			return nil
		case nil:
			*d = nil
			return nil
		}
		return convertValue(d, v)
	case *int64:
		if x, ok := v.(int64); ok {
			*d = x
			return nil
		}
		return convertValue(d, v)
	case *int:
		if x, ok := v.(int64); ok && int64(int(x)) == x {
			*d = int(x)
			return nil
		}
		return convertValue(d, v)
	case *bool:
		if x, ok := v.(int64); ok && (x == 0 || x == 1) {
			*d = x == 1
			return nil
		}
		return convertValue(d, v)
	case *float64:
		if x, ok := v.(float64); ok {
			*d = x
			return nil
		}
		return convertValue(d, v)
	case *sql.NullString:
		if x, ok := v.(string); ok {
			*d = sql.NullString{String: x, Valid: true}
			return nil
		}
		return d.Scan(v)
	case *sql.NullInt64:
		if x, ok := v.(int64); ok {
			*d = sql.NullInt64{Int64: x, Valid: true}
			return nil
		}
		return d.Scan(v)
	case *any:
		if b, ok := v.([]byte); ok {
			v = bytes.Clone(b)
		}
		*d = v
		return nil
	case sql.Scanner:
		return d.Scan(v)
	}
	// A type of the chat package over a string, an integer or a bool
	// (chat.ChannelType and the like): by its kind, as database/sql does.
	if p := reflect.ValueOf(dest); p.Kind() == reflect.Pointer && !p.IsNil() {
		switch e := p.Elem(); e.Kind() {
		case reflect.String:
			switch x := v.(type) {
			case string:
				e.SetString(x)
				return nil
			case []byte:
				e.SetString(string(x))
				return nil
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			var x int64
			if err := scanValue(&x, v); err != nil {
				return err
			}
			if e.OverflowInt(x) {
				return fmt.Errorf("%d overflows %s", x, e.Type())
			}
			e.SetInt(x)
			return nil
		case reflect.Bool:
			if x, ok := v.(bool); ok {
				e.SetBool(x)
				return nil
			}
		}
	}
	return fmt.Errorf("cannot store %T in %T", v, dest)
}

// convertValue stores v in d with database/sql's conversion; a NULL is an
// error, as Rows.Scan makes it for a destination that cannot hold one.
func convertValue[T any](d *T, v driver.Value) error {
	var n sql.Null[T]
	if err := n.Scan(v); err != nil {
		return err
	}
	if !n.Valid {
		return fmt.Errorf("converting NULL to %T is unsupported", *d)
	}
	*d = n.V
	return nil
}

// notFound returns a CodeNotFound error naming the missing thing.
func notFound(what, id string) error {
	return &chat.Error{Code: chat.CodeNotFound, Message: what + " " + id + " not found"}
}

// conflict returns a CodeConflict error naming the duplicate.
func conflict(what, id string) error {
	return &chat.Error{Code: chat.CodeConflict, Message: what + " " + id + " already exists"}
}

// asNotFound turns a CodeNotFound from translate into a named one.
func asNotFound(err error, what, id string) error {
	if chat.ErrorCode(err) == chat.CodeNotFound {
		return notFound(what, id)
	}
	return err
}

// asConflict turns a CodeConflict from translate into a named one.
func asConflict(err error, what, id string) error {
	if chat.ErrorCode(err) == chat.CodeConflict {
		return &chat.Error{Code: chat.CodeConflict, Message: what + " " + id + " already exists", Err: err}
	}
	return err
}

// Time encoding: INTEGER unix milliseconds, UTC.

func ms(t chat.Time) int64 { return t.Time.UnixMilli() }

func msp(t *chat.Time) any {
	if t == nil {
		return nil
	}
	return t.Time.UnixMilli()
}

func fromMs(v int64) chat.Time { return chat.Time{Time: time.UnixMilli(v).UTC()} }

func fromMsp(v sql.NullInt64) *chat.Time {
	if !v.Valid {
		return nil
	}
	t := fromMs(v.Int64)
	return &t
}

// JSON encoding: nil maps and slices are the JSON literal null, so that
// they read back as nil.

func jsonText(v any) (string, error) {
	// Fast paths for the common empty values.
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return "null", nil
		}
	case []string:
		if x == nil {
			return "null", nil
		}
	case map[string]int:
		if x == nil {
			return "null", nil
		}
	case chat.Hashflag:
		if x.Bits == 0 && x.Hashes == 0 && x.Hash == nil {
			return zeroHashflag, nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", &chat.Error{Code: chat.CodeBadRequest, Message: "value cannot be stored as JSON", Err: err}
	}
	return string(b), nil
}

// zeroHashflag is the JSON of an unflagged item's chat.Hashflag.
const zeroHashflag = `{"bits":0,"hashes":0,"hash":null}`

// fromJSON decodes a JSON column into dest. Columns are scanned as
// strings; the fast paths below compare that string to the common values
// without copying it.
func fromJSON(b string, dest any) error {
	if b == "null" {
		return nil // dest keeps its zero value
	}
	if h, ok := dest.(*chat.Hashflag); ok && b == zeroHashflag {
		*h = chat.Hashflag{}
		return nil
	}
	// Empty arrays and objects (tags and reactions of most messages).
	switch d := dest.(type) {
	case *[]string:
		if b == "[]" {
			*d = []string{}
			return nil
		}
	case *map[string]int:
		if b == "{}" {
			*d = map[string]int{}
			return nil
		}
	case *map[string]any:
		if b == "{}" {
			*d = map[string]any{}
			return nil
		}
		if m, ok := flatStrings(b); ok {
			*d = m
			return nil
		}
	}
	if err := json.Unmarshal([]byte(b), dest); err != nil {
		return &chat.Error{Code: chat.CodeInternal, Message: "sqlite: corrupt JSON column", Err: err}
	}
	return nil
}

// stringObjects holds the decoders of flatStrings, each with the buffer it
// reads from.
var stringObjects = sync.Pool{New: func() any {
	d := new(stringObject)
	d.dec = jsontext.NewDecoder(&d.buf)
	return d
}}

type stringObject struct {
	buf bytes.Buffer
	dec *jsontext.Decoder
}

// flatStrings decodes, as json.Unmarshal into a map[string]any would, a
// JSON object whose values are all strings (the data of a text message
// written before migration 0024, which has no text column, or data with
// more strings than the text), reading it token by token with the decoder of
// package jsontext: about half the instructions of decoding it into a map
// (BenchmarkDecodeData). It reports false for anything else (other values,
// invalid JSON), which is left to json.Unmarshal.
func flatStrings(b string) (map[string]any, bool) {
	d := stringObjects.Get().(*stringObject)
	defer stringObjects.Put(d)
	d.buf.Reset()
	d.buf.WriteString(b)
	// As json.Unmarshal: a repeated key keeps its last value, invalid
	// UTF-8 becomes U+FFFD.
	d.dec.Reset(&d.buf, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if t, err := d.dec.ReadToken(); err != nil || t.Kind() != '{' {
		return nil, false
	}
	m := make(map[string]any, 1)
	for d.dec.PeekKind() == '"' {
		k, err := d.dec.ReadToken()
		if err != nil {
			return nil, false
		}
		key := k.String() // the token is valid until the next read
		if d.dec.PeekKind() != '"' {
			return nil, false
		}
		v, err := d.dec.ReadToken()
		if err != nil {
			return nil, false
		}
		m[key] = v.String()
	}
	if t, err := d.dec.ReadToken(); err != nil || t.Kind() != '}' {
		return nil, false
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return nil, false // something after the object
	}
	return m, true
}

// jsonIDs encodes a list of strings for `IN (SELECT value FROM
// json_each(?))`, which keeps the statement text (and so the cached
// prepared statement) the same for any number of ids.
func jsonIDs(ids []string) string {
	if ids == nil {
		return "[]"
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

const inIDs = "(SELECT value FROM json_each(?))"

// prefixRange returns the bounds lo <= s < hi of the strings that start
// with p in byte order; hi is "" when there is no upper bound.
func prefixRange(p string) (lo, hi string) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return p, string(b[:i+1])
		}
	}
	return p, ""
}

func lower(s string) string { return strings.ToLower(s) }

// limitParam is the placeholder for LIMIT (and, for uniformity, OFFSET)
// values. When a LIMIT is a bare parameter, SQLite's planner reads the
// bound value, which marks the prepared statement to be compiled again
// every time the parameter is bound: every execution of a cached statement
// paid a full re-prepare. As an expression the value is read only when the
// statement runs, and the plan is the same.
const limitParam = "?+0"

// textParam is the placeholder for a TEXT value compared for equality
// with the leading column of the index that also gives a query its ORDER
// BY. For "col = ? ... ORDER BY" SQLite's planner reads the bound value,
// and a statement planned from a bound value is compiled again every
// time the parameter is bound, so a cached statement paid a full
// re-prepare on every execution (the page of messages did, about a fifth
// of its cost). A CAST is a constant expression of the parameter: the plan
// is the same index search, made once.
const textParam = "CAST(? AS TEXT)"

// limitArg returns the LIMIT value for limit (-1, no limit, when <= 0).
func limitArg(limit int) int {
	if limit <= 0 {
		return -1
	}
	return limit
}

// bumpVersion increments a change counter in the versions table.
func (t *tx) bumpVersion(ctx context.Context, name string) error {
	if t.write {
		delete(t.s.vers, name)
	}
	_, err := t.exec(ctx, "UPDATE versions SET value = value + 1 WHERE name = ?", name)
	return err
}

// version reads a change counter of the versions table. A write
// transaction reads each counter once (Store.vers): nothing but its own
// bumpVersion changes the table while it holds the database's write lock,
// and every Update of a group commit (the posts of a busy channel, each
// asking for the rules' and the webhooks' counters) shares the
// transaction.
func (t *tx) version(ctx context.Context, name string) (int64, error) {
	if t.write {
		if v, ok := t.s.vers[name]; ok {
			if _, err := t.ctx(ctx); err != nil {
				return 0, err
			}
			return v, nil
		}
	}
	var v int64
	err := t.row(ctx, "SELECT value FROM versions WHERE name = ?", []any{name}, &v)
	if err == nil && t.write {
		if t.s.vers == nil {
			t.s.vers = make(map[string]int64, 2)
		}
		t.s.vers[name] = v
	}
	return v, err
}
