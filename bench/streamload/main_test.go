package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoopbackDSN(t *testing.T) {
	for dsn, ok := range map[string]bool{
		"postgres://postgres@127.0.0.1:5432/test?sslmode=disable": true,
		"postgresql://u:p@127.0.0.1/db":                           true,
		"postgres://postgres@db.example.com:5432/test":            false,
		"postgres://127.0.0.1.example.com/test":                   false,
		"host=127.0.0.1 dbname=test":                              false,
		"http://127.0.0.1:5432/":                                  false,
	} {
		require.Equal(t, ok, loopbackDSN(dsn), dsn)
	}
}

// TestBadFlags: out-of-range counts and non-loopback targets are refused
// before anything starts.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-idle", "0"},
		{"-idle", "100001"},
		{"-members", "10001"},
		{"-messages", "0"},
		{"-burst", "1000"},
		{"-store", "mysql"},
		{"-store", "postgres", "-dsn", "postgres://postgres@10.0.0.5/test"},
		{"-scenarios", "nope", "-store", "postgres"},
	} {
		require.Error(t, run(args, io.Discard, io.Discard), "%v", args)
	}
	require.Error(t, postBurst(options{postURL: "http://example.com:80"}), "posts go to 127.0.0.1 only")
}
