package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	chat "github.com/chatengine/chat"
)

// driverRow scans every kind of SQLite value into every destination type
// of the store's scan functions as database/sql's Rows.Scan does: the same
// values, and an error where database/sql gives one.
func TestDriverRowScansLikeDatabaseSQL(t *testing.T) {
	t.Parallel()
	s := newStore(t, nil)
	ctx := context.Background()
	const q = `SELECT 42, -7, 0, 1, 1099511627776, 'text', '', '12', NULL, 2.5, x'00ff', x'3132', 'standard'`
	dests := []func() any{
		func() any { return new(string) },
		func() any { return new([]byte) },
		func() any { return new(int64) },
		func() any { return new(int) },
		func() any { return new(bool) },
		func() any { return new(float64) },
		func() any { return new(sql.NullString) },
		func() any { return new(sql.NullInt64) },
		func() any { return new(sql.NullFloat64) },
		func() any { return new(any) },
		func() any { return new(chat.ChannelType) },
		func() any { return new(chat.Membership) },
		func() any { return new(testInt32) },
		func() any { return new(testBool) },
	}
	// The values as the driver returns them.
	var raw []driver.Value
	require.NoError(t, s.wconn.Raw(func(dc any) error {
		rows, err := dc.(driver.QueryerContext).QueryContext(ctx, q, nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		raw = make([]driver.Value, len(rows.Columns()))
		if err := rows.Next(raw); err != nil {
			return err
		}
		if err := rows.Next(make([]driver.Value, len(raw))); err != io.EOF {
			return fmt.Errorf("a second row: %v", err)
		}
		return nil
	}))
	for col := range raw {
		for _, mk := range dests {
			want, got := mk(), mk()
			name := fmt.Sprintf("column %d (%T) into %T", col, raw[col], want)
			wantErr := scanColumn(t, s, q, col, len(raw), want)
			gotErr := driverRow{raw[col]}.Scan(got)
			if wantErr != nil {
				require.Error(t, gotErr, name)
				continue
			}
			require.NoError(t, gotErr, name)
			require.Equal(t, reflect.ValueOf(want).Elem().Interface(), reflect.ValueOf(got).Elem().Interface(), name)
		}
	}
	// A copy: the driver's bytes may be reused.
	b := []byte{1, 2}
	var dst []byte
	require.NoError(t, driverRow{b}.Scan(&dst))
	b[0] = 9
	require.Equal(t, []byte{1, 2}, dst)
	require.Error(t, driverRow{int64(1), int64(2)}.Scan(new(int64)), "fewer destinations than columns")
}

type (
	testInt32 int32
	testBool  bool
)

// scanColumn scans column col of q's one row into dest through
// database/sql.
func scanColumn(t *testing.T, s *Store, q string, col, n int, dest any) error {
	t.Helper()
	rows, err := s.rdb.QueryContext(context.Background(), q)
	require.NoError(t, err)
	defer rows.Close()
	require.True(t, rows.Next())
	ds := make([]any, n)
	for i := range ds {
		ds[i] = new(any)
	}
	ds[col] = dest
	return rows.Scan(ds...)
}
