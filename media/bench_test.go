package media

import (
	"bytes"
	"image/jpeg"
	"os"
	"sync"
	"testing"

	"github.com/chatengine/chat/media/internal/testimg"
)

var (
	photo12Once sync.Once
	photo12     []byte
)

// photo12MP returns a deterministic 4000x3000 photo-like JPEG (quality 92,
// 4:2:0, EXIF orientation 6, about 3 MB), generated once per test binary.
func photo12MP() []byte {
	photo12Once.Do(func() { photo12 = testimg.PhotoJPEG(4000, 3000, 1, 92, 6) })
	return photo12
}

// BenchmarkProcess12MP measures producing small, medium and large from a
// 12-megapixel photo, as the API does for every upload. The sub-benchmarks
// compare the box-filter pre-shrink with resizing the full decoded image,
// and show the cost of also producing the full rendition.
func BenchmarkProcess12MP(b *testing.B) {
	in := photo12MP()
	for _, bc := range []struct {
		name   string
		shrink bool
		opt    Options
	}{
		{"pre-shrink", true, Options{}},
		{"no-pre-shrink", false, Options{}},
		{"keep-full", true, Options{KeepFull: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			preShrink = bc.shrink
			defer func() { preShrink = true }()
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ProcessBytes(in, bc.opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkProcessSmallPNG measures a typical small upload with
// transparency, which goes through the NRGBA path and PNG encoding.
func BenchmarkProcessSmallPNG(b *testing.B) {
	in, err := os.ReadFile("testdata/alpha.png")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ProcessBytes(in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode12MP measures image/jpeg decoding the same 12-megapixel
// photo alone: the part of Process12MP that no resizing choice changes.
func BenchmarkDecode12MP(b *testing.B) {
	in := photo12MP()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jpeg.Decode(bytes.NewReader(in)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadHeader12MP measures the header checks an upload now makes
// before processing (ProcessBytes makes them again): sniffing, the
// decoder's header, and the frame header for the decoded bytes.
func BenchmarkReadHeader12MP(b *testing.B) {
	in := photo12MP()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadHeader(in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
