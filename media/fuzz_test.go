package media

import (
	"errors"
	"runtime"
	"testing"
)

// fuzzOptions keep the fuzzer's images small, so the memory bound below is
// meaningful: with 65,536 pixels at most, no input may make Process allocate
// more than fuzzMemBound in total.
var fuzzOptions = Options{MaxPixels: 1 << 16, MaxBytes: 1 << 20}

// fuzzMemBound is the most one ProcessBytes call may allocate under
// fuzzOptions. A legitimate 65,536-pixel image needs well under 4 MiB; the
// bound leaves room for JPEG's worst case (progressive coefficients kept for
// every 8x8 block of a degenerate, 1-pixel-wide image with the largest
// sampling factors), so anything above it is a limit that does not hold.
const fuzzMemBound = 64 << 20

// FuzzProcess checks that no input makes Process panic, return an error
// other than ErrNotImage or ErrTooLarge, produce inconsistent renditions,
// or allocate more than fuzzMemBound. The seed corpus is in
// testdata/fuzz/FuzzProcess (written by testdata/gen.go). Run it with
//
//	go test -run '^$' -fuzz FuzzProcess -fuzztime 5m ./media
func FuzzProcess(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := ProcessBytes(b, fuzzOptions)
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > fuzzMemBound {
			t.Fatalf("allocated %d bytes, more than the bound %d (err %v)", n, fuzzMemBound, err)
		}
		if err != nil {
			if !errors.Is(err, ErrNotImage) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if int64(res.Width)*int64(res.Height) > fuzzOptions.MaxPixels {
			t.Fatalf("%dx%d accepted over the pixel limit", res.Width, res.Height)
		}
		if len(res.Renditions) != len(Sizes) {
			t.Fatalf("%d renditions", len(res.Renditions))
		}
		for i, r := range res.Renditions {
			w, h := fit(res.Width, res.Height, Sizes[i].Max)
			if r.Name != Sizes[i].Name || r.Width != w || r.Height != h || len(r.Data) == 0 {
				t.Fatalf("rendition %d: %s %dx%d (%d bytes), want %s %dx%d", i, r.Name, r.Width, r.Height, len(r.Data), Sizes[i].Name, w, h)
			}
			if r.ContentType != "image/jpeg" && r.ContentType != "image/png" {
				t.Fatalf("content type %q", r.ContentType)
			}
		}
	})
}
