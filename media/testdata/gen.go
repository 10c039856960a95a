//go:build ignore

// gen writes the media package's test fixtures and fuzz seed corpus. Run it
// from the media directory with
//
//	go run ./testdata/gen.go
//
// It is deterministic: running it again rewrites identical files. Every
// image is drawn by internal/testimg. Go has no WebP encoder, so the WebP
// fixtures are those images encoded by libwebp's cwebp command (Debian
// package webp; apt-get install -y webp): lossy, lossy with an alpha
// channel, and lossless carrying an EXIF orientation. Another cwebp
// version may write different bytes for the same pixels.
package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/chatengine/chat/media/internal/testimg"
)

func main() {
	must(os.MkdirAll("testdata/fuzz/FuzzProcess", 0o755))

	// A photo-like JPEG stored sideways, as phones do (EXIF orientation 6).
	photo := testimg.PhotoJPEG(1600, 1000, 2, 90, 6)
	write("photo-o6.jpg", photo)

	// Quadrants with a big-endian ("MM") EXIF block, orientation 8.
	write("quadrants-o8-mm.jpg", testimg.WithEXIFOrientation(encJPEG(testimg.Quadrants(64, 32), 95), 8, true))

	// A PNG with an alpha gradient, and an opaque PNG.
	write("alpha.png", encPNG(testimg.Translucent(400, 240)))
	write("opaque.png", encPNG(testimg.Photo(300, 200, 3)))

	// A grayscale JPEG.
	g := image.NewGray(image.Rect(0, 0, 500, 300))
	for y := 0; y < 300; y++ {
		for x := 0; x < 500; x++ {
			g.SetGray(x, y, color.Gray{Y: uint8((x*255/499 + y*255/299) / 2)})
		}
	}
	write("gray.jpg", encJPEG(g, 90))

	// A two-frame GIF: quadrants, then solid red. Only the first counts.
	write("anim.gif", animGIF())

	// WebP: lossy (decodes to Y'CbCr), lossy with alpha (the alpha
	// gradient, so the renditions are PNG), and lossless with an EXIF
	// chunk holding orientation 6 (cwebp copies it from the JPEG's APP1
	// segment).
	write("photo.lossy.webp", cwebp(encPNG(testimg.Photo(240, 160, 7)), ".png", "-q", "80"))
	write("translucent.lossy-alpha.webp", cwebp(encPNG(testimg.Translucent(400, 300)), ".png", "-q", "80", "-alpha_q", "100"))
	write("quadrants-o6.lossless.webp", cwebp(testimg.WithEXIFOrientation(encJPEG(testimg.Quadrants(100, 60), 95), 6, false),
		".jpg", "-lossless", "-metadata", "exif"))

	// Fuzz seeds: small valid files of each type and a few broken ones.
	small := encJPEG(testimg.Photo(24, 16, 4), 80)
	seeds := map[string][]byte{
		"jpeg-o6":       testimg.WithEXIFOrientation(small, 6, false),
		"jpeg-gray":     encJPEG(image.NewGray(image.Rect(0, 0, 9, 7)), 75),
		"jpeg-trunc":    small[:len(small)/2],
		"png-alpha":     encPNG(testimg.Translucent(12, 8)),
		"png-exif-o5":   testimg.PNGWithEXIF(encPNG(testimg.Quadrants(10, 6)), 5),
		"png-bomb":      testimg.PNGHeader(100000, 100000),
		"gif-anim":      animGIFSized(10, 6),
		"webp-lossy":    cwebp(encPNG(testimg.Photo(20, 12, 8)), ".png", "-q", "50"),
		"webp-lossless": cwebp(testimg.WithEXIFOrientation(encJPEG(testimg.Quadrants(10, 6), 90), 5, true), ".jpg", "-lossless", "-metadata", "exif"),
		"text":          []byte("hello, not an image"),
		"riff-bad":      []byte("RIFF\x04\x00\x00\x00WEBPVP8 "),
	}
	for name, b := range seeds {
		content := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
		write(filepath.Join("fuzz", "FuzzProcess", name), []byte(content))
	}
}

func animGIF() []byte { return animGIFSized(200, 120) }

func animGIFSized(w, h int) []byte {
	pal := color.Palette{testimg.Red, testimg.Green, testimg.Blue, testimg.White}
	q := testimg.Quadrants(w, h)
	f1 := image.NewPaletted(q.Rect, pal)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			f1.Set(x, y, q.At(x, y))
		}
	}
	f2 := image.NewPaletted(q.Rect, pal) // All index 0: red.
	var buf bytes.Buffer
	must(gif.EncodeAll(&buf, &gif.GIF{Image: []*image.Paletted{f1, f2}, Delay: []int{50, 50}}))
	return buf.Bytes()
}

func encJPEG(m image.Image, q int) []byte {
	var buf bytes.Buffer
	must(jpeg.Encode(&buf, m, &jpeg.Options{Quality: q}))
	return buf.Bytes()
}

func encPNG(m image.Image) []byte {
	var buf bytes.Buffer
	must(png.Encode(&buf, m))
	return buf.Bytes()
}

func write(name string, b []byte) {
	must(os.WriteFile(filepath.Join("testdata", name), b, 0o644))
	fmt.Printf("%-45s %7d bytes\n", name, len(b))
}

// cwebp encodes the image file in (whose name ends in ext, which tells
// cwebp its format) with cwebp and the given options, and returns the WebP
// file.
func cwebp(in []byte, ext string, args ...string) []byte {
	dir, err := os.MkdirTemp("", "gen")
	must(err)
	defer os.RemoveAll(dir)
	src, dst := filepath.Join(dir, "in"+ext), filepath.Join(dir, "out.webp")
	must(os.WriteFile(src, in, 0o644))
	cmd := exec.Command("cwebp", append(append([]string{"-quiet"}, args...), src, "-o", dst)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatalf("cwebp %v: %v (apt-get install -y webp)", args, err)
	}
	b, err := os.ReadFile(dst)
	must(err)
	return b
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
