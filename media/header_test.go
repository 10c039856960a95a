package media

import (
	"bytes"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	stdjpeg "image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chatengine/chat/media/internal/testimg"
)

// encodePNG encodes m as PNG.
func encodePNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, m))
	return b.Bytes()
}

// headerImages returns test images of every decoded form: PNG gray,
// 16-bit gray, paletted, RGB, RGBA and 16-bit RGBA; JPEG colour 4:2:0 and
// gray; GIF; WebP lossy, lossy with alpha and lossless.
func headerImages(t testing.TB) map[string][]byte {
	t.Helper()
	const w, h = 640, 480
	photo := testimg.Photo(w, h, 7)
	gray := image.NewGray(photo.Bounds())
	gray16 := image.NewGray16(photo.Bounds())
	pal := image.NewPaletted(photo.Bounds(), color.Palette{color.Black, color.White, color.NRGBA{R: 255, A: 255}})
	for y := range h {
		for x := range w {
			c := photo.At(x, y)
			gray.Set(x, y, c)
			gray16.Set(x, y, c)
			pal.Set(x, y, c)
		}
	}
	var j, jg, g bytes.Buffer
	require.NoError(t, stdjpeg.Encode(&j, photo, nil))
	require.NoError(t, stdjpeg.Encode(&jg, gray, nil))
	require.NoError(t, gif.Encode(&g, pal, nil))
	return map[string][]byte{
		"gray.png":         encodePNG(t, gray),
		"gray16.png":       encodePNG(t, gray16),
		"paletted.png":     encodePNG(t, pal),
		"rgb.png":          encodePNG(t, photo),
		"rgba.png":         encodePNG(t, testimg.Translucent(w, h)),
		"rgba16.png":       encodePNG(t, testimg.Deep(w, h)),
		"420.jpg":          j.Bytes(),
		"gray.jpg":         jg.Bytes(),
		"paletted.gif":     g.Bytes(),
		"lossy.webp":       readFixture(t, "photo.lossy.webp"),
		"alpha.webp":       readFixture(t, "translucent.lossy-alpha.webp"),
		"lossless.webp":    readFixture(t, "quadrants-o6.lossless.webp"),
		"photo-o6.jpg":     readFixture(t, "photo-o6.jpg"),
		"quadrants-o8.jpg": readFixture(t, "quadrants-o8-mm.jpg"),
	}
}

// TestDecodedBytesPerPixel checks the bytes a decoded pixel takes, read
// from each header.
func TestDecodedBytesPerPixel(t *testing.T) {
	t.Parallel()
	imgs := headerImages(t)
	want := map[string]float64{
		"gray.png": 1, "gray16.png": 2, "paletted.png": 1, "rgb.png": 4, "rgba.png": 4, "rgba16.png": 8,
		"420.jpg": 1.5, "gray.jpg": 1, "paletted.gif": 5,
		"lossy.webp": 1.5, "alpha.webp": 10.5, "lossless.webp": 8,
	}
	for name, bpp := range want {
		hd, err := ReadHeader(imgs[name], Options{})
		require.NoError(t, err, name)
		px := float64(hd.Width * hd.Height)
		// JPEG planes are rounded up to whole 16×16 or 8×8 blocks.
		require.InDelta(t, bpp, float64(hd.DecodedBytes)/px, 0.05, name)
		require.Greater(t, hd.Memory, hd.DecodedBytes, name)
	}
	// A progressive frame header adds 4 bytes for each coefficient: 64 a
	// block of every component (the same file, its SOF0 marked SOF2).
	j := imgs["420.jpg"]
	base, err := ReadHeader(j, Options{})
	require.NoError(t, err)
	i := bytes.Index(j, []byte{0xFF, 0xC0})
	require.Positive(t, i)
	p := append([]byte{}, j...)
	p[i+1] = 0xC2
	prog, err := ReadHeader(p, Options{})
	require.NoError(t, err)
	require.Equal(t, base.DecodedBytes*5, prog.DecodedBytes)
	// An interlaced PNG is decoded pass by pass, then copied: twice.
	g := append([]byte{}, imgs["gray.png"]...)
	g[28] = 1
	fixCRC(g)
	il, err := ReadHeader(g, Options{})
	require.NoError(t, err)
	require.Equal(t, int64(2*640*480), il.DecodedBytes)
	// The full rendition is counted when it is kept.
	hd, err := ReadHeader(imgs["rgb.png"], Options{})
	require.NoError(t, err)
	full, err := ReadHeader(imgs["rgb.png"], Options{KeepFull: true})
	require.NoError(t, err)
	require.Equal(t, hd.Memory+8*640*480, full.Memory)
}

// TestDecodedBytesLimit refuses an image by the bytes its decoded pixels
// take, from the header: a 16-bit RGBA PNG takes twice the memory of an
// 8-bit one of the same size, which the pixel limit alone cannot tell.
func TestDecodedBytesLimit(t *testing.T) {
	// Not parallel: testing.AllocsPerRun needs the process to itself.
	const w, h = 300, 200
	deep := encodePNG(t, testimg.Deep(w, h))
	cfg, err := png.DecodeConfig(bytes.NewReader(deep))
	require.NoError(t, err)
	require.Equal(t, color.NRGBA64Model, cfg.ColorModel, "a 16-bit RGBA PNG")
	flat := encodePNG(t, testimg.Translucent(w, h))

	limit := int64(w * h * 4)
	_, err = ProcessBytes(deep, Options{MaxDecodedBytes: limit})
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorContains(t, err, "bytes decoded")
	_, err = ReadHeader(deep, Options{MaxDecodedBytes: limit})
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = ProcessBytes(flat, Options{MaxDecodedBytes: limit})
	require.NoError(t, err, "the 8-bit image of the same size fits")
	_, err = ProcessBytes(deep, Options{MaxDecodedBytes: 2 * limit})
	require.NoError(t, err)
	// Both pass the pixel limit.
	_, err = ReadHeader(deep, Options{MaxPixels: w * h, MaxDecodedBytes: 2 * limit})
	require.NoError(t, err)

	// By default, a 7000×7000 16-bit RGBA PNG (392 MB decoded) is refused
	// from its header, which is all this one has; the 8-bit one (196 MB)
	// passes the header checks.
	big16 := pngHeader(t, 7000, 7000, 16, 6)
	big8 := pngHeader(t, 7000, 7000, 8, 6)
	_, err = ReadHeader(big16, Options{})
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = ProcessBytes(big16, Options{})
	require.ErrorIs(t, err, ErrTooLarge)
	hd, err := ReadHeader(big8, Options{})
	require.NoError(t, err)
	require.Equal(t, int64(7000*7000*4), hd.DecodedBytes)
	allocs := testing.AllocsPerRun(20, func() {
		_, err := ProcessBytes(big16, Options{})
		require.ErrorIs(t, err, ErrTooLarge)
	})
	require.Less(t, allocs, 40.0, "refused before any pixel buffer")
}

// pngHeader returns a PNG signature and IHDR chunk with the given bit
// depth and color type, and nothing else.
func pngHeader(t *testing.T, w, h uint32, depth, colorType byte) []byte {
	t.Helper()
	b := testimg.PNGHeader(w, h)
	b[24], b[25] = depth, colorType
	fixCRC(b)
	return b
}

// fixCRC rewrites the CRC of the IHDR chunk of the PNG b.
func fixCRC(b []byte) {
	crc := crc32.ChecksumIEEE(b[12:29]) // The chunk type and data.
	b[29], b[30], b[31], b[32] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
}

// TestDecodedBytesCoverDecoder measures what decoding allocates and checks
// that Header.DecodedBytes is never less, beyond a fixed overhead (zlib
// and Huffman tables, read buffers): for the images above and for every
// JPEG, PNG and GIF test image of the Go source tree (progressive, CMYK
// and every chroma subsampling of JPEG; interlaced, paletted and 16-bit
// PNG). It does not run in parallel, so the allocation counts are the
// decoder's alone.
func TestDecodedBytesCoverDecoder(t *testing.T) {
	imgs := headerImages(t)
	out, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err, "go env GOROOT")
	goroot := strings.TrimSpace(string(out))
	for _, pattern := range []string{"image/testdata/*", "image/png/testdata/pngsuite/*.png"} {
		m, _ := filepath.Glob(filepath.Join(goroot, "src", pattern))
		for _, f := range m {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			imgs["go:"+filepath.Base(f)] = b
		}
	}
	const overhead = 256 << 10
	checked := 0
	for name, b := range imgs {
		hd, err := ReadHeader(b, Options{})
		if err != nil {
			continue // not an image, or not one we read
		}
		cfg := image.Config{Width: hd.Width, Height: hd.Height}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err = decode(hd.MIME, b, cfg)
		runtime.ReadMemStats(&after)
		if err != nil {
			continue // a file the decoder refuses
		}
		alloc := int64(after.TotalAlloc - before.TotalAlloc)
		if hd.Width*hd.Height >= 100_000 {
			t.Logf("%s: %dx%d, %d bytes allocated, %d estimated", name, hd.Width, hd.Height, alloc, hd.DecodedBytes)
		}
		require.LessOrEqual(t, alloc, hd.DecodedBytes+overhead, "%s: %dx%d decoded with %d bytes, estimated %d", name, hd.Width, hd.Height, alloc, hd.DecodedBytes)
		checked++
	}
	require.GreaterOrEqual(t, checked, len(headerImages(t)))
}
