//go:build cgo

package main

// cgoEnabled reports whether this test binary was built with cgo, which the
// SQLite store needs.
const cgoEnabled = true
