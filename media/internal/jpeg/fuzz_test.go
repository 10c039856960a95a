package jpeg

import (
	"bytes"
	stdjpeg "image/jpeg"
	"testing"

	"github.com/chatengine/chat/media/internal/testimg"
)

// FuzzDecodeScaled checks that the fork never panics and, at full size,
// agrees with the standard library on which inputs decode. Its seeds are
// large enough to run the reconstruction pipeline.
func FuzzDecodeScaled(f *testing.F) {
	f.Add(testimg.PhotoJPEG(600, 480, 9, 75, 0), uint8(0))
	f.Add(testimg.PhotoJPEG(640, 512, 9, 50, 6), uint8(1))
	f.Add(testimg.PhotoJPEG(130, 70, 9, 90, 0), uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, s uint8) {
		shift := uint(s % 4)
		cfg, err := DecodeConfig(bytes.NewReader(b))
		if err != nil || cfg.Width*cfg.Height > 4<<20 {
			return
		}
		m, err := DecodeScaled(bytes.NewReader(b), shift)
		_, stdErr := stdjpeg.Decode(bytes.NewReader(b))
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("fork error %v, standard library error %v", err, stdErr)
		}
		if err != nil {
			return
		}
		n := 1 << shift
		if w, h := m.Bounds().Dx(), m.Bounds().Dy(); w != (cfg.Width+n-1)/n || h != (cfg.Height+n-1)/n {
			t.Fatalf("%dx%d at shift %d from %dx%d", w, h, shift, cfg.Width, cfg.Height)
		}
	})
}
