package jpeg

import (
	"bytes"
	"fmt"
	stdjpeg "image/jpeg"
	"testing"

	"github.com/chatengine/chat/media/internal/testimg"
)

// BenchmarkDecode12MP compares the standard library's decoder with this
// fork at each reduction, on a 4000x3000 photo-like baseline JPEG.
func BenchmarkDecode12MP(b *testing.B) {
	in := testimg.PhotoJPEG(4000, 3000, 1, 92, 0)
	b.Run("stdlib", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			if _, err := stdjpeg.Decode(bytes.NewReader(in)); err != nil {
				b.Fatal(err)
			}
		}
	})
	for shift := uint(0); shift <= 3; shift++ {
		b.Run(fmt.Sprintf("shift=%d", shift), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, err := DecodeScaled(bytes.NewReader(in), shift); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
