package media

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	stdjpeg "image/jpeg"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/disintegration/imaging"
	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/media/internal/testimg"
)

var update = flag.Bool("update", false, "rewrite the golden renditions in testdata/golden")

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// decodeOutput decodes a rendition with the standard decoders, checking its
// format matches its content type.
func decodeOutput(t testing.TB, r Rendition) image.Image {
	t.Helper()
	var m image.Image
	var err error
	switch r.ContentType {
	case "image/jpeg":
		m, err = stdjpeg.Decode(bytes.NewReader(r.Data))
	case "image/png":
		m, err = png.Decode(bytes.NewReader(r.Data))
	default:
		t.Fatalf("unexpected content type %q", r.ContentType)
	}
	require.NoError(t, err, r.Name)
	require.Equal(t, image.Rect(0, 0, r.Width, r.Height), m.Bounds(), r.Name)
	return m
}

// meanAbsDiff is the mean absolute difference per channel (R, G, B, A, on
// a 0-255 scale) between two images of the same size.
func meanAbsDiff(a, b image.Image) float64 {
	na, nb := imaging.Clone(a), imaging.Clone(b)
	var sum float64
	for i := range na.Pix {
		d := int(na.Pix[i]) - int(nb.Pix[i])
		if d < 0 {
			d = -d
		}
		sum += float64(d)
	}
	return sum / float64(len(na.Pix))
}

// nrgbaAt returns the colour of m at (x, y) as NRGBA.
func nrgbaAt(m image.Image, x, y int) color.NRGBA {
	return color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
}

func requireColor(t *testing.T, want color.NRGBA, got color.NRGBA, tol int, msgAndArgs ...any) {
	t.Helper()
	d := func(a, b uint8) int {
		if a > b {
			return int(a - b)
		}
		return int(b - a)
	}
	if d(want.R, got.R) > tol || d(want.G, got.G) > tol || d(want.B, got.B) > tol || d(want.A, got.A) > tol {
		require.Failf(t, "colour mismatch", "want %v, got %v: %s", want, got, fmt.Sprint(msgAndArgs...))
	}
}

// requireSizes checks the rendition names, order and dimensions.
func requireSizes(t *testing.T, res *Result, full bool, w, h int) {
	t.Helper()
	names := []string{"small", "medium", "large"}
	if full {
		names = append(names, "full")
	}
	require.Len(t, res.Renditions, len(names))
	for i, r := range res.Renditions {
		require.Equal(t, names[i], r.Name)
		limit := max(w, h)
		if i < len(Sizes) {
			limit = Sizes[i].Max
		}
		ww, hh := fit(w, h, limit)
		require.Equal(t, ww, r.Width, "%s width", r.Name)
		require.Equal(t, hh, r.Height, "%s height", r.Name)
		require.LessOrEqual(t, r.Width, w, "%s never upscaled", r.Name)
		require.LessOrEqual(t, r.Height, h, "%s never upscaled", r.Name)
	}
}

func TestSniff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		mime string
	}{
		{"\xff\xd8\xff\xe0rest", "image/jpeg"},
		{"\x89PNG\r\n\x1a\nrest", "image/png"},
		{"GIF87a...", "image/gif"},
		{"GIF89a...", "image/gif"},
		{"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"},
		{"RIFF\x00\x00\x00\x00WAVEfmt ", ""},
		{"\xff\xd8", ""},
		{"BM....", ""},
		{"<svg xmlns=", ""},
		{"", ""},
	} {
		mime, ok := Sniff([]byte(tc.in))
		require.Equal(t, tc.mime, mime, "%q", tc.in)
		require.Equal(t, tc.mime != "", ok, "%q", tc.in)
	}
}

func TestFit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ w, h, max, ww, hh int }{
		{4000, 3000, 1500, 1500, 1125},
		{3000, 4000, 160, 120, 160},
		{100, 50, 160, 100, 50},
		{160, 160, 160, 160, 160},
		{10000, 1, 160, 160, 1},
		{1, 10000, 600, 1, 600},
		{1601, 1000, 1500, 1500, 937},
	} {
		ww, hh := fit(tc.w, tc.h, tc.max)
		require.Equal(t, [2]int{tc.ww, tc.hh}, [2]int{ww, hh}, "%+v", tc)
	}
}

func TestShrinkShift(t *testing.T) {
	t.Parallel()
	require.Equal(t, uint(1), shrinkShift(4000, 3000, 1500))
	require.Equal(t, uint(1), shrinkShift(3000, 4000, 1500))
	require.Equal(t, uint(0), shrinkShift(2998, 2000, 1500))
	require.Equal(t, uint(1), shrinkShift(2999, 2000, 1500)) // Half is 1500 rounded up.
	require.Equal(t, uint(2), shrinkShift(6000, 4000, 1500))
	require.Equal(t, uint(3), shrinkShift(20000, 100, 1500))
	require.Equal(t, uint(0), shrinkShift(20000, 100, 0))
	require.Equal(t, uint(0), shrinkShift(1000, 800, 1500))
}

// goldenFixtures are the checked-in inputs with golden renditions.
var goldenFixtures = []struct {
	file      string
	mime      string
	w, h      int // Oriented original dimensions.
	transpMsg bool
}{
	{"photo-o6.jpg", "image/jpeg", 1000, 1600, false},
	{"quadrants-o8-mm.jpg", "image/jpeg", 32, 64, false},
	{"alpha.png", "image/png", 400, 240, true},
	{"opaque.png", "image/png", 300, 200, false},
	{"gray.jpg", "image/jpeg", 500, 300, false},
	{"anim.gif", "image/gif", 200, 120, false},
	{"photo.lossy.webp", "image/webp", 240, 160, false},
	{"translucent.lossy-alpha.webp", "image/webp", 400, 300, true},
	{"quadrants-o6.lossless.webp", "image/webp", 60, 100, false},
}

// TestGolden compares the renditions of every fixture with the reference
// outputs in testdata/golden: dimensions and format exactly, pixels within a
// small mean absolute error (so harmless encoder changes do not break it).
// Run with -update to regenerate the references.
func TestGolden(t *testing.T) {
	for _, fx := range goldenFixtures {
		t.Run(fx.file, func(t *testing.T) {
			res, err := ProcessBytes(readFixture(t, fx.file), Options{KeepFull: true})
			require.NoError(t, err)
			require.Equal(t, fx.mime, res.SourceMIME)
			require.Equal(t, [2]int{fx.w, fx.h}, [2]int{res.Width, res.Height})
			requireSizes(t, res, true, fx.w, fx.h)
			wantType := "image/jpeg"
			if fx.transpMsg {
				wantType = "image/png"
			}
			for _, r := range res.Renditions {
				require.Equal(t, wantType, r.ContentType, r.Name)
				ext := strings.TrimPrefix(r.ContentType, "image/")
				golden := filepath.Join("testdata", "golden", fx.file+"."+r.Name+"."+ext)
				if *update {
					require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
					require.NoError(t, os.WriteFile(golden, r.Data, 0o644))
					continue
				}
				want, err := os.ReadFile(golden)
				require.NoError(t, err, "missing golden file: run go test -run TestGolden -update")
				wm := decodeOutput(t, Rendition{Name: r.Name, ContentType: r.ContentType, Width: r.Width, Height: r.Height, Data: want})
				gm := decodeOutput(t, r)
				require.Less(t, meanAbsDiff(wm, gm), 1.0, "%s differs from %s", r.Name, golden)
			}
		})
	}
}

// orientCases gives, for each EXIF orientation, which stored quadrant colour
// is displayed at the top-left and top-right (see testimg.Quadrants).
var orientCases = []struct {
	o           int
	topLeft     color.NRGBA
	topRight    color.NRGBA
	swapsWidths bool
}{
	{1, testimg.Red, testimg.Green, false},
	{2, testimg.Green, testimg.Red, false},
	{3, testimg.White, testimg.Blue, false},
	{4, testimg.Blue, testimg.White, false},
	{5, testimg.Red, testimg.Blue, true},
	{6, testimg.Blue, testimg.Red, true},
	{7, testimg.White, testimg.Green, true},
	{8, testimg.Green, testimg.White, true},
}

// checkQuadrants checks the displayed top-left and top-right quadrant
// centres of m.
func checkQuadrants(t *testing.T, m image.Image, tl, tr color.NRGBA, msg string) {
	t.Helper()
	b := m.Bounds()
	// JPEG's chroma subsampling blurs colour edges in tiny images, hence
	// the tolerance; the four colours are much further apart than that.
	requireColor(t, tl, nrgbaAt(m, b.Dx()/4, b.Dy()/4), 24, msg+" top-left")
	requireColor(t, tr, nrgbaAt(m, b.Dx()*3/4, b.Dy()/4), 24, msg+" top-right")
}

// TestOrientation checks all eight EXIF orientations through the planar
// YCbCr path (JPEG), the Gray path and the RGBA path (PNG eXIf), both for
// an image smaller than every size and for one that is resized.
func TestOrientation(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{40, 20}, {320, 160}} {
		w, h := size[0], size[1]
		q := testimg.Quadrants(w, h)
		var jb, pb bytes.Buffer
		require.NoError(t, stdjpeg.Encode(&jb, q, &stdjpeg.Options{Quality: 95}))
		require.NoError(t, png.Encode(&pb, q))
		for _, tc := range orientCases {
			inputs := map[string][]byte{
				"jpeg-II": testimg.WithEXIFOrientation(jb.Bytes(), tc.o, false),
				"jpeg-MM": testimg.WithEXIFOrientation(jb.Bytes(), tc.o, true),
				"png":     testimg.PNGWithEXIF(pb.Bytes(), tc.o),
			}
			for kind, in := range inputs {
				msg := fmt.Sprintf("%s %dx%d orientation %d", kind, w, h, tc.o)
				res, err := ProcessBytes(in, Options{KeepFull: true})
				require.NoError(t, err, msg)
				ow, oh := w, h
				if tc.swapsWidths {
					ow, oh = h, w
				}
				require.Equal(t, [2]int{ow, oh}, [2]int{res.Width, res.Height}, msg)
				requireSizes(t, res, true, ow, oh)
				for _, r := range res.Renditions {
					require.Equal(t, "image/jpeg", r.ContentType, msg)
					checkQuadrants(t, decodeOutput(t, r), tc.topLeft, tc.topRight, msg+" "+r.Name)
				}
			}
		}
	}
}

// TestOrientationGray checks orientation 6 on a grayscale JPEG.
func TestOrientationGray(t *testing.T) {
	t.Parallel()
	g := image.NewGray(image.Rect(0, 0, 300, 100))
	for y := 0; y < 100; y++ {
		for x := 0; x < 300; x++ {
			if x < 150 && y < 50 {
				g.Pix[y*g.Stride+x] = 250 // Only the stored top-left is white.
			}
		}
	}
	var buf bytes.Buffer
	require.NoError(t, stdjpeg.Encode(&buf, g, &stdjpeg.Options{Quality: 95}))
	res, err := ProcessBytes(testimg.WithEXIFOrientation(buf.Bytes(), 6, false), Options{})
	require.NoError(t, err)
	require.Equal(t, [2]int{100, 300}, [2]int{res.Width, res.Height})
	for _, r := range res.Renditions {
		m := decodeOutput(t, r)
		_, isGray := m.(*image.Gray)
		require.True(t, isGray, "gray stays gray")
		b := m.Bounds()
		// Rotated clockwise, the stored top-left is now the top-right.
		require.Greater(t, nrgbaAt(m, b.Dx()*3/4, b.Dy()/4).R, uint8(200), r.Name)
		require.Less(t, nrgbaAt(m, b.Dx()/4, b.Dy()/4).R, uint8(50), r.Name)
	}
}

// TestOrientation6Photo is the case the API cares most about: a sideways
// phone photo large enough to be decoded at reduced size.
func TestOrientation6Photo(t *testing.T) {
	t.Parallel()
	// 3010 px wide: decoded at half size (1505 px), then resized to 1500.
	q := testimg.Quadrants(3010, 1000)
	var buf bytes.Buffer
	require.NoError(t, stdjpeg.Encode(&buf, q, &stdjpeg.Options{Quality: 90}))
	res, err := ProcessBytes(testimg.WithEXIFOrientation(buf.Bytes(), 6, false), Options{})
	require.NoError(t, err)
	require.Equal(t, [2]int{1000, 3010}, [2]int{res.Width, res.Height})
	requireSizes(t, res, false, 1000, 3010)
	require.Equal(t, [2]int{498, 1500}, [2]int{res.Renditions[2].Width, res.Renditions[2].Height})
	for _, r := range res.Renditions {
		m := decodeOutput(t, r)
		checkQuadrants(t, m, testimg.Blue, testimg.Red, r.Name)
		// The corner pixel itself, too.
		requireColor(t, testimg.Blue, nrgbaAt(m, 1, 1), 12, r.Name+" corner")
	}
}

func TestNeverUpscaled(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{1, 1}, {100, 50}, {160, 160}, {161, 90}, {640, 320}, {300, 700}} {
		var buf bytes.Buffer
		require.NoError(t, png.Encode(&buf, testimg.Quadrants(size[0], size[1])))
		res, err := ProcessBytes(buf.Bytes(), Options{KeepFull: true})
		require.NoError(t, err)
		requireSizes(t, res, true, size[0], size[1])
	}
}

func TestTransparencyGivesPNG(t *testing.T) {
	t.Parallel()
	// One transparent pixel is enough.
	m := testimg.Photo(300, 200, 6)
	nm := imaging.Clone(m)
	nm.Pix[3] = 0
	var opaque, transp bytes.Buffer
	require.NoError(t, png.Encode(&opaque, m))
	require.NoError(t, png.Encode(&transp, nm))

	res, err := ProcessBytes(opaque.Bytes(), Options{})
	require.NoError(t, err)
	for _, r := range res.Renditions {
		require.Equal(t, "image/jpeg", r.ContentType)
	}
	res, err = ProcessBytes(transp.Bytes(), Options{})
	require.NoError(t, err)
	for _, r := range res.Renditions {
		require.Equal(t, "image/png", r.ContentType)
		decodeOutput(t, r)
	}

	// The alpha gradient survives resizing: left opaque, right transparent.
	res, err = ProcessBytes(readFixture(t, "alpha.png"), Options{})
	require.NoError(t, err)
	for _, r := range res.Renditions {
		om := decodeOutput(t, r)
		b := om.Bounds()
		require.Greater(t, nrgbaAt(om, 0, b.Dy()/2).A, uint8(240), r.Name)
		require.Less(t, nrgbaAt(om, b.Dx()-1, b.Dy()/2).A, uint8(15), r.Name)
	}
}

func TestGIFFirstFrame(t *testing.T) {
	t.Parallel()
	res, err := ProcessBytes(readFixture(t, "anim.gif"), Options{})
	require.NoError(t, err)
	require.Equal(t, "image/gif", res.SourceMIME)
	for _, r := range res.Renditions {
		require.Equal(t, "image/jpeg", r.ContentType)
		checkQuadrants(t, decodeOutput(t, r), testimg.Red, testimg.Green, r.Name)
	}

	// A first frame covering only part of the screen leaves the rest
	// transparent, so the output is PNG at the screen size.
	pal := color.Palette{color.NRGBA{0, 0, 0, 0}, testimg.Green}
	f := image.NewPaletted(image.Rect(10, 10, 30, 20), pal)
	for i := range f.Pix {
		f.Pix[i] = 1
	}
	var buf bytes.Buffer
	require.NoError(t, gif.EncodeAll(&buf, &gif.GIF{
		Image:  []*image.Paletted{f},
		Delay:  []int{0},
		Config: image.Config{ColorModel: pal, Width: 40, Height: 30},
	}))
	res, err = ProcessBytes(buf.Bytes(), Options{})
	require.NoError(t, err)
	require.Equal(t, [2]int{40, 30}, [2]int{res.Width, res.Height})
	r := res.Renditions[0]
	require.Equal(t, "image/png", r.ContentType)
	m := decodeOutput(t, r)
	require.Equal(t, uint8(0), nrgbaAt(m, 0, 0).A)
	requireColor(t, testimg.Green, nrgbaAt(m, 15, 15), 0)
}

// TestWebP covers the three kinds of WebP file: lossy (Y'CbCr), lossy with
// an alpha channel, and lossless with an EXIF orientation in its EXIF chunk.
func TestWebP(t *testing.T) {
	t.Parallel()
	res, err := ProcessBytes(readFixture(t, "photo.lossy.webp"), Options{})
	require.NoError(t, err)
	require.Equal(t, "image/webp", res.SourceMIME)
	for _, r := range res.Renditions {
		require.Equal(t, "image/jpeg", r.ContentType)
	}

	res, err = ProcessBytes(readFixture(t, "translucent.lossy-alpha.webp"), Options{})
	require.NoError(t, err)
	for _, r := range res.Renditions {
		require.Equal(t, "image/png", r.ContentType)
		m := decodeOutput(t, r)
		b := m.Bounds()
		require.Greater(t, nrgbaAt(m, 0, b.Dy()/2).A, uint8(240), r.Name)
		require.Less(t, nrgbaAt(m, b.Dx()-1, b.Dy()/2).A, uint8(15), r.Name)
	}

	// Stored 100x60, orientation 6: displayed 60x100, rotated clockwise.
	res, err = ProcessBytes(readFixture(t, "quadrants-o6.lossless.webp"), Options{KeepFull: true})
	require.NoError(t, err)
	require.Equal(t, [2]int{60, 100}, [2]int{res.Width, res.Height})
	for _, r := range res.Renditions {
		require.Equal(t, "image/jpeg", r.ContentType)
		checkQuadrants(t, decodeOutput(t, r), testimg.Blue, testimg.Red, r.Name)
	}
}

// jpegSegments lists the markers of a JPEG up to its first scan.
func jpegSegments(t *testing.T, b []byte) []byte {
	t.Helper()
	require.True(t, bytes.HasPrefix(b, []byte{0xFF, 0xD8}))
	var markers []byte
	for i := 2; i+4 <= len(b); {
		require.Equal(t, byte(0xFF), b[i])
		m := b[i+1]
		markers = append(markers, m)
		if m == 0xDA {
			break
		}
		i += 2 + int(b[i+2])<<8 + int(b[i+3])
	}
	return markers
}

func TestMetadataStripped(t *testing.T) {
	t.Parallel()
	in := readFixture(t, "photo-o6.jpg")
	require.Contains(t, jpegSegments(t, in), byte(0xE1), "the fixture has EXIF")
	res, err := ProcessBytes(in, Options{KeepFull: true})
	require.NoError(t, err)
	for _, r := range res.Renditions {
		for _, m := range jpegSegments(t, r.Data) {
			require.False(t, m >= 0xE0 && m <= 0xEF, "%s has an APP%d segment", r.Name, m-0xE0)
			require.NotEqual(t, byte(0xFE), m, "%s has a comment", r.Name)
		}
		require.NotContains(t, string(r.Data), "Exif")
	}
	// PNG output carries no text or EXIF chunk either.
	res, err = ProcessBytes(testimg.PNGWithEXIF(readFixture(t, "alpha.png"), 3), Options{})
	require.NoError(t, err)
	for _, r := range res.Renditions {
		for _, chunk := range []string{"eXIf", "tEXt", "iTXt", "zTXt"} {
			require.NotContains(t, string(r.Data), chunk)
		}
	}
}

// TestPixelLimitBeforeDecoding checks that a tiny file declaring an enormous
// image is refused from its header, allocating almost nothing.
func TestPixelLimitBeforeDecoding(t *testing.T) {
	bomb := testimg.PNGHeader(100000, 100000)
	require.Less(t, len(bomb), 64)
	_, err := ProcessBytes(bomb, Options{})
	require.ErrorIs(t, err, ErrTooLarge)

	allocs := testing.AllocsPerRun(20, func() {
		_, err := ProcessBytes(bomb, Options{})
		require.ErrorIs(t, err, ErrTooLarge)
	})
	require.Less(t, allocs, 40.0)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < 10; i++ {
		_, _ = ProcessBytes(bomb, Options{})
	}
	runtime.ReadMemStats(&after)
	require.Less(t, (after.TotalAlloc-before.TotalAlloc)/10, uint64(256<<10), "bytes allocated per refusal")

	// The same from a JPEG header (65000x65000, no scan data), through
	// Process, and with a custom limit.
	j := readFixture(t, "quadrants-o8-mm.jpg")
	i := bytes.Index(j, []byte{0xFF, 0xC0}) // SOF0: length, precision, height, width.
	require.Positive(t, i)
	j = append([]byte{}, j...)
	j[i+5], j[i+6], j[i+7], j[i+8] = 0xFD, 0xE8, 0xFD, 0xE8
	_, err = Process(bytes.NewReader(j), Options{})
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = ProcessBytes(readFixture(t, "alpha.png"), Options{MaxPixels: 400*240 - 1})
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = ProcessBytes(readFixture(t, "alpha.png"), Options{MaxPixels: 400 * 240})
	require.NoError(t, err)
}

func TestByteLimit(t *testing.T) {
	t.Parallel()
	in := readFixture(t, "gray.jpg")
	_, err := Process(bytes.NewReader(in), Options{MaxBytes: int64(len(in)) - 1})
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = ProcessBytes(in, Options{MaxBytes: int64(len(in)) - 1})
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = Process(bytes.NewReader(in), Options{MaxBytes: int64(len(in))})
	require.NoError(t, err)
	// Process stops reading at the limit: an endless stream is refused.
	_, err = Process(io.MultiReader(bytes.NewReader(in), zeros{}), Options{MaxBytes: 1 << 20})
	require.ErrorIs(t, err, ErrTooLarge)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestNotImage(t *testing.T) {
	t.Parallel()
	for name, in := range map[string][]byte{
		"empty":     nil,
		"text":      []byte("hello world"),
		"html":      []byte("<html><body>hi</body></html>"),
		"svg":       []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`),
		"bmp":       []byte("BM\x00\x00\x00\x00"),
		"jpeg-soi":  []byte("\xff\xd8\xff"),
		"png-sig":   []byte("\x89PNG\r\n\x1a\n"),
		"gif-head":  []byte("GIF89a\x01\x00"),
		"webp-head": []byte("RIFF\x00\x00\x00\x00WEBP"),
		"zero-png":  testimg.PNGHeader(0, 0),
	} {
		_, err := ProcessBytes(in, Options{})
		require.ErrorIs(t, err, ErrNotImage, name)
		require.False(t, errors.Is(err, ErrTooLarge), name)
	}
}

// TestTruncated cuts every fixture at several points: each cut must fail
// with ErrNotImage, never panic. A GIF is the exception: once its first frame
// is complete the rest of the file is not needed, so late cuts may succeed.
func TestTruncated(t *testing.T) {
	t.Parallel()
	for _, fx := range goldenFixtures {
		in := readFixture(t, fx.file)
		for _, frac := range []float64{0.02, 0.1, 0.5, 0.9, 0.99} {
			cut := in[:int(float64(len(in))*frac)]
			_, err := ProcessBytes(cut, Options{})
			if err == nil && fx.mime == "image/gif" && frac >= 0.5 {
				continue
			}
			require.ErrorIs(t, err, ErrNotImage, "%s cut at %.0f%%", fx.file, frac*100)
		}
	}
}

func TestJPEGQuality(t *testing.T) {
	t.Parallel()
	in := readFixture(t, "opaque.png")
	lo, err := ProcessBytes(in, Options{JPEGQuality: 40})
	require.NoError(t, err)
	def, err := ProcessBytes(in, Options{})
	require.NoError(t, err)
	hi, err := ProcessBytes(in, Options{JPEGQuality: 1000}) // Clamped to 100.
	require.NoError(t, err)
	require.Less(t, len(lo.Renditions[2].Data), len(def.Renditions[2].Data))
	require.Less(t, len(def.Renditions[2].Data), len(hi.Renditions[2].Data))
}

func TestResultRendition(t *testing.T) {
	t.Parallel()
	res, err := ProcessBytes(readFixture(t, "gray.jpg"), Options{})
	require.NoError(t, err)
	require.Equal(t, "medium", res.Rendition("medium").Name)
	require.Nil(t, res.Rendition(FullName))
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	in := readFixture(t, "opaque.png")
	want, err := ProcessBytes(in, Options{})
	require.NoError(t, err)
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			got, err := ProcessBytes(in, Options{})
			if err == nil && !bytes.Equal(got.Renditions[1].Data, want.Renditions[1].Data) {
				err = errors.New("different output")
			}
			errs <- err
		}()
	}
	for i := 0; i < 8; i++ {
		require.NoError(t, <-errs)
	}
}

// TestStandardLibraryImages runs every JPEG, PNG and GIF test image of the
// Go source tree (when present) through ProcessBytes: CMYK, RGB and every
// chroma subsampling of JPEG, progressive files, and PNG's whole suite of
// bit depths, palettes, interlacing and alpha. Each must decode, or fail
// with ErrNotImage, and agree with the standard decoders on its size.
func TestStandardLibraryImages(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err, "go env GOROOT")
	goroot := strings.TrimSpace(string(out))
	var files []string
	for _, pattern := range []string{"image/testdata/*", "image/png/testdata/pngsuite/*.png"} {
		m, _ := filepath.Glob(filepath.Join(goroot, "src", pattern))
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skip("Go source tree not available")
	}
	decoded := 0
	for _, f := range files {
		in, err := os.ReadFile(f)
		require.NoError(t, err)
		if _, ok := Sniff(in); !ok {
			continue
		}
		name := filepath.Base(f)
		res, err := ProcessBytes(in, Options{KeepFull: true})
		cfg, _, cerr := image.DecodeConfig(bytes.NewReader(in))
		_, _, derr := image.Decode(bytes.NewReader(in))
		if derr != nil {
			require.ErrorIs(t, err, ErrNotImage, name)
			continue
		}
		require.NoError(t, err, name)
		require.NoError(t, cerr, name)
		w, h := cfg.Width, cfg.Height
		requireSizes(t, res, true, w, h)
		for _, r := range res.Renditions {
			decodeOutput(t, r)
		}
		decoded++
	}
	require.Greater(t, decoded, 50)
}
