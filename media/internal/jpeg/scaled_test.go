package jpeg

import (
	"bytes"
	"image"
	stdjpeg "image/jpeg"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/media/internal/testimg"
)

// fixtures returns the standard library's JPEG test images (when the Go
// source tree is present) plus a generated photo-like image.
func fixtures(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{
		"photo-odd.jpeg": testimg.PhotoJPEG(333, 217, 3, 90, 0),
		// Large enough (over pipelineMinBlock blocks) for the pipelined
		// reconstruction.
		"photo-big.jpeg": testimg.PhotoJPEG(1000, 700, 4, 85, 0),
	}
	files, _ := filepath.Glob(filepath.Join(runtime.GOROOT(), "src", "image", "testdata", "*.jpeg"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		out[filepath.Base(f)] = b
	}
	return out
}

// TestShiftZeroMatchesStdlib checks that the fork decodes at full size
// exactly as image/jpeg does.
func TestShiftZeroMatchesStdlib(t *testing.T) {
	for name, b := range fixtures(t) {
		want, werr := stdjpeg.Decode(bytes.NewReader(b))
		got, gerr := DecodeScaled(bytes.NewReader(b), 0)
		if werr != nil {
			require.Error(t, gerr, name)
			continue
		}
		require.NoError(t, gerr, name)
		require.Equal(t, want.Bounds(), got.Bounds(), name)
		require.True(t, reflect.DeepEqual(want, got), "%s: pixels differ", name)
	}
}

// plane is one 8-bit channel of a decoded image, before colour conversion.
type plane struct {
	pix    []byte
	stride int
	w, h   int
}

// decodePlanes decodes b with the given shift and returns the decoder's
// internal planes (gray; Y, Cb, Cr; and black for 4-component files), so the
// test sees the samples before any RGB or CMYK conversion.
func decodePlanes(t *testing.T, b []byte, shift uint) []plane {
	t.Helper()
	d := decoder{shift: shift}
	_, err := d.decode(bytes.NewReader(b), false)
	require.NoError(t, err)
	if d.img1 != nil {
		m := d.img1
		return []plane{{m.Pix, m.Stride, m.Rect.Dx(), m.Rect.Dy()}}
	}
	m := d.img3
	last := m.COffset(m.Rect.Max.X-1, m.Rect.Max.Y-1)
	cw, ch := last%m.CStride+1, last/m.CStride+1
	ps := []plane{
		{m.Y, m.YStride, m.Rect.Dx(), m.Rect.Dy()},
		{m.Cb, m.CStride, cw, ch},
		{m.Cr, m.CStride, cw, ch},
	}
	if d.blackPix != nil {
		ps = append(ps, plane{d.blackPix, d.blackStride, d.blackStride, len(d.blackPix) / d.blackStride})
	}
	return ps
}

// TestScaledIsBoxAverage checks that every scaled decode is, plane by plane,
// close to the box average of the full-size decode, and that the public
// result has the rounded-up scaled size.
func TestScaledIsBoxAverage(t *testing.T) {
	for name, b := range fixtures(t) {
		full, err := stdjpeg.Decode(bytes.NewReader(b))
		if err != nil {
			continue
		}
		fp := decodePlanes(t, b, 0)
		for shift := uint(1); shift <= 3; shift++ {
			got, err := DecodeScaled(bytes.NewReader(b), shift)
			require.NoError(t, err, name)
			fb := full.Bounds()
			n := 1 << shift
			require.Equal(t, image.Rect(0, 0, (fb.Dx()+n-1)/n, (fb.Dy()+n-1)/n), got.Bounds(), "%s shift %d", name, shift)
			gp := decodePlanes(t, b, shift)
			require.Len(t, gp, len(fp))
			for i := range fp {
				var sumErr, count float64
				for y := 0; y < fp[i].h/n; y++ {
					for x := 0; x < fp[i].w/n; x++ {
						var s float64
						for yy := 0; yy < n; yy++ {
							for xx := 0; xx < n; xx++ {
								s += float64(fp[i].pix[(y*n+yy)*fp[i].stride+x*n+xx])
							}
						}
						d := s/float64(n*n) - float64(gp[i].pix[y*gp[i].stride+x])
						if d < 0 {
							d = -d
						}
						sumErr += d
						count++
					}
				}
				// Shift 3 is exactly the block mean (the DC term). Shifts 1 and 2
				// are an ideal low-pass within each block rather than a box
				// filter, so they differ from the box mean near sharp edges;
				// TestReducedIDCTFormula checks them exactly.
				limit := 5.0
				if shift == 3 {
					limit = 1.0
				}
				require.Less(t, sumErr/count, limit, "%s shift %d plane %d: mean abs error", name, shift, i)
			}
		}
	}
}

// TestReducedIDCTFormula compares reducedIDCT with the reduced IDCT computed
// in floating point from its definition, for random coefficient blocks.
func TestReducedIDCTFormula(t *testing.T) {
	var seed uint64 = 12345
	rnd := func(n int) int32 {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int32(seed%uint64(2*n+1)) - int32(n)
	}
	cu := func(u int) float64 {
		if u == 0 {
			return 1 / math.Sqrt2
		}
		return 1
	}
	for iter := 0; iter < 2000; iter++ {
		var b, qt block
		for i := range b {
			b[i] = rnd(40) >> (i / 8) // Larger at low frequencies, like photos.
			qt[i] = 1 + int32(seed%16)
		}
		b[0] = rnd(120)
		for _, shift := range []uint{1, 2} {
			m := 8 >> shift
			orig := b
			dst := make([]byte, m*m)
			reducedIDCT(&b, &qt, shift, dst, m)
			require.Equal(t, orig, b, "input must not be modified")
			for y := 0; y < m; y++ {
				for x := 0; x < m; x++ {
					var s float64
					for v := 0; v < m; v++ {
						for u := 0; u < m; u++ {
							f := float64(b[v*8+u] * qt[zigOf[v*8+u]])
							s += 0.25 * cu(u) * cu(v) * f *
								math.Cos(float64((2*x+1)*u)*math.Pi/float64(2*m)) *
								math.Cos(float64((2*y+1)*v)*math.Pi/float64(2*m))
						}
					}
					want := math.Round(s) + 128
					want = math.Max(0, math.Min(255, want))
					require.InDelta(t, want, float64(dst[y*m+x]), 1, "shift %d at %d,%d", shift, x, y)
				}
			}
		}
	}
}

func TestDecodeScaledErrors(t *testing.T) {
	_, err := DecodeScaled(bytes.NewReader([]byte("not a jpeg")), 1)
	require.Error(t, err)
	_, err = DecodeScaled(bytes.NewReader(nil), 4)
	require.Error(t, err)
}

// TestPipelineTruncated checks that a large image cut short fails cleanly
// with the reconstruction pipeline running.
func TestPipelineTruncated(t *testing.T) {
	b := testimg.PhotoJPEG(1000, 700, 4, 85, 0)
	for _, frac := range []float64{0.3, 0.7, 0.99} {
		for shift := uint(0); shift <= 3; shift++ {
			_, err := DecodeScaled(bytes.NewReader(b[:int(float64(len(b))*frac)]), shift)
			require.Error(t, err)
		}
	}
}
