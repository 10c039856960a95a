package media

import (
	"bytes"
	"image"
	"image/jpeg"
	"math"
	"testing"

	"github.com/disintegration/imaging"
	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/media/internal/testimg"
)

// TestShrinkPlane checks the box filter's means, including the partial
// blocks at the right and bottom edges.
func TestShrinkPlane(t *testing.T) {
	t.Parallel()
	// 5×3, with a stride wider than the width (the padding must be ignored).
	p := plane{stride: 7, w: 5, h: 3, pix: []byte{
		10, 20, 30, 40, 50, 255, 255,
		30, 40, 50, 60, 70, 255, 255,
		1, 2, 3, 4, 5, 255, 255,
	}}
	d := shrinkPlane(p, 1)
	require.Equal(t, [2]int{3, 2}, [2]int{d.w, d.h})
	require.Equal(t, []byte{
		25, 45, 60, // (10+20+30+40)/4, (30+40+50+60)/4, (50+70)/2
		2, 4, 5, // (1+2)/2 rounded, (3+4)/2 rounded, 5
	}, d.pix)

	// 2^3: one 8×8 block and a partial 1×8 one, in one row.
	q := newPlane(9, 8)
	for i := range q.pix {
		q.pix[i] = byte(i % 9 * 30) // Columns 0, 30, ..., 240.
	}
	d = shrinkPlane(q, 3)
	require.Equal(t, [2]int{2, 1}, [2]int{d.w, d.h})
	require.Equal(t, []byte{105, 240}, d.pix) // Mean of 0..210 step 30; 240.
}

// TestShrinkKeepsSubsampling checks that every chroma subsampling decoded
// from a JPEG comes out of shrink with planes of consistent sizes: each
// pixel of the result reads its own chroma sample, and the colours survive.
func TestShrinkKeepsSubsampling(t *testing.T) {
	t.Parallel()
	for _, r := range []image.YCbCrSubsampleRatio{
		image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420,
		image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410,
	} {
		for _, size := range [][2]int{{101, 37}, {64, 64}, {9, 130}} {
			src := image.NewYCbCr(image.Rect(0, 0, size[0], size[1]), r)
			for i := range src.Y {
				src.Y[i] = byte(i)
			}
			for i := range src.Cb {
				src.Cb[i], src.Cr[i] = 90, 200
			}
			for s := uint(1); s <= 3; s++ {
				m := shrink(src, s).(*image.YCbCr)
				f := 1 << s
				require.Equal(t, image.Rect(0, 0, (size[0]+f-1)/f, (size[1]+f-1)/f), m.Rect, "%v %v s=%d", r, size, s)
				require.Equal(t, r, m.SubsampleRatio)
				last := m.COffset(m.Rect.Max.X-1, m.Rect.Max.Y-1)
				require.Len(t, m.Cb, last+1, "%v %v s=%d: chroma plane size", r, size, s)
				for i := range m.Cb {
					require.Equal(t, [2]byte{90, 200}, [2]byte{m.Cb[i], m.Cr[i]})
				}
			}
		}
	}
	g := image.NewGray(image.Rect(0, 0, 10, 3))
	require.Equal(t, image.Rect(0, 0, 5, 2), shrink(g, 1).Bounds())
	n := image.NewNRGBA(image.Rect(0, 0, 10, 3))
	require.Same(t, n, shrink(n, 1), "RGBA images are left to the resizer")
}

// psnr is the peak signal-to-noise ratio, in dB, between two images of the
// same size over their R, G and B channels.
func psnr(a, b image.Image) float64 {
	na, nb := imaging.Clone(a), imaging.Clone(b)
	var se float64
	for i := range na.Pix {
		if i%4 == 3 {
			continue
		}
		d := float64(na.Pix[i]) - float64(nb.Pix[i])
		se += d * d
	}
	mse := se / float64(len(na.Pix)/4*3)
	return 10 * math.Log10(255*255/mse)
}

// TestPreShrinkQuality compares the large rendition made through the box
// pre-shrink with a Lanczos resize of the whole decoded photo, before
// encoding. The difference must stay well below what encoding the
// rendition at quality 85 itself does to it.
func TestPreShrinkQuality(t *testing.T) {
	t.Parallel()
	src, err := jpeg.Decode(bytes.NewReader(testimg.PhotoJPEG(3200, 2400, 5, 92, 0)))
	require.NoError(t, err)
	w, h := fit(3200, 2400, 1500)
	s := shrinkShift(3200, 2400, 1500)
	require.Equal(t, uint(1), s)

	ref := imaging.Resize(src, w, h, imaging.Lanczos)
	got := resize(shrink(src, s), w, h, imaging.Lanczos)
	full := resize(src, w, h, imaging.Lanczos)
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, got, &jpeg.Options{Quality: DefaultJPEGQuality}))
	enc, err := jpeg.Decode(&buf)
	require.NoError(t, err)

	pre, planar, q85 := psnr(ref, got), psnr(ref, full), psnr(got, enc)
	t.Logf("PSNR against the reference: pre-shrink %.1f dB, planar without pre-shrink %.1f dB; quality 85 encoding %.1f dB", pre, planar, q85)
	require.Greater(t, pre, 40.0)
	require.Greater(t, pre, q85, "the pre-shrink must change less than encoding does")
}
