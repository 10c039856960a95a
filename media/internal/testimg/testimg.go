// Package testimg makes deterministic, photo-like test images for the media
// package's tests, benchmarks and benchmark driver.
package testimg

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"math"
)

// rng is a small deterministic xorshift generator, so images are identical on
// every machine and Go version.
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*r = rng(x)
	return x
}

// Photo returns a w×h opaque RGBA image that compresses like a photograph:
// smooth large-scale colour gradients, a few soft blobs of detail and mild
// per-pixel noise (like sensor noise). The same seed gives the same image.
func Photo(w, h int, seed uint64) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rng(seed*0x9E3779B97F4A7C15 + 1)
	// A few blobs with random centres, radii and colours.
	type blob struct{ cx, cy, rad, cr, cg, cb float64 }
	blobs := make([]blob, 12)
	for i := range blobs {
		blobs[i] = blob{
			cx:  float64(r.next() % uint64(w+1)),
			cy:  float64(r.next() % uint64(h+1)),
			rad: float64(w+h) * (0.03 + float64(r.next()%100)/1000),
			cr:  float64(r.next()%160) - 80,
			cg:  float64(r.next()%160) - 80,
			cb:  float64(r.next()%160) - 80,
		}
	}
	fw, fh := float64(w), float64(h)
	for y := 0; y < h; y++ {
		fy := float64(y)
		row := img.Pix[y*img.Stride:]
		for x := 0; x < w; x++ {
			fx := float64(x)
			// Smooth gradients.
			rr := 40 + 150*fx/fw + 20*math.Sin(fy/fh*6)
			gg := 60 + 120*fy/fh + 20*math.Cos(fx/fw*5)
			bb := 180 - 100*(fx+fy)/(fw+fh)
			// Texture: a fine but smooth pattern, like foliage or fabric.
			t := 12 * math.Sin(fx*0.07+math.Sin(fy*0.05)*3) * math.Cos(fy*0.06)
			rr += t
			gg += t
			bb += t
			for _, b := range blobs {
				dx, dy := fx-b.cx, fy-b.cy
				d2 := (dx*dx + dy*dy) / (b.rad * b.rad)
				if d2 < 4 {
					k := math.Exp(-d2)
					rr += b.cr * k
					gg += b.cg * k
					bb += b.cb * k
				}
			}
			// Sensor-like noise.
			n := r.next()
			rr += float64(int(n%21) - 10)
			gg += float64(int((n>>8)%21) - 10)
			bb += float64(int((n>>16)%21) - 10)
			row[4*x+0] = clamp(rr)
			row[4*x+1] = clamp(gg)
			row[4*x+2] = clamp(bb)
			row[4*x+3] = 255
		}
	}
	return img
}

func clamp(v float64) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v + 0.5)
}

// PhotoJPEG encodes Photo(w, h, seed) as a baseline 4:2:0 JPEG of the given
// quality. When orientation is between 1 and 8 an EXIF APP1 segment carrying
// that Orientation tag is inserted right after the SOI marker, as cameras do.
func PhotoJPEG(w, h int, seed uint64, quality int, orientation int) []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, Photo(w, h, seed), &jpeg.Options{Quality: quality}); err != nil {
		panic(err)
	}
	if orientation < 1 || orientation > 8 {
		return buf.Bytes()
	}
	return WithEXIFOrientation(buf.Bytes(), orientation, false)
}

// WithEXIFOrientation returns a copy of the JPEG j with an APP1 Exif segment
// holding the given Orientation inserted after SOI. bigEndian selects a
// Motorola ("MM") TIFF header instead of Intel ("II").
func WithEXIFOrientation(j []byte, orientation int, bigEndian bool) []byte {
	app1 := EXIFSegment(orientation, bigEndian)
	out := make([]byte, 0, len(j)+len(app1))
	out = append(out, j[:2]...)
	out = append(out, app1...)
	out = append(out, j[2:]...)
	return out
}

// EXIFSegment returns a complete APP1 marker segment (FF E1, length, "Exif\0\0",
// TIFF header, IFD0 with a Make tag and the Orientation tag).
func EXIFSegment(orientation int, bigEndian bool) []byte {
	tiff := TIFFOrientation(orientation, bigEndian)
	payload := append([]byte("Exif\x00\x00"), tiff...)
	n := len(payload) + 2
	seg := []byte{0xFF, 0xE1, byte(n >> 8), byte(n)}
	return append(seg, payload...)
}

// TIFFOrientation returns a minimal TIFF structure (as found in EXIF blocks)
// whose IFD0 has two entries: Make ("Go") and Orientation.
func TIFFOrientation(orientation int, bigEndian bool) []byte {
	put16 := func(b []byte, v uint16) {
		if bigEndian {
			b[0], b[1] = byte(v>>8), byte(v)
		} else {
			b[0], b[1] = byte(v), byte(v>>8)
		}
	}
	put32 := func(b []byte, v uint32) {
		if bigEndian {
			b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
		} else {
			b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		}
	}
	b := make([]byte, 8+2+2*12+4)
	if bigEndian {
		copy(b, "MM")
	} else {
		copy(b, "II")
	}
	put16(b[2:], 42)
	put32(b[4:], 8)
	put16(b[8:], 2)
	e := b[10:]
	// Make: ASCII, count 3, value "Go\0" inline.
	put16(e[0:], 0x010F)
	put16(e[2:], 2)
	put32(e[4:], 3)
	copy(e[8:], "Go\x00")
	e = e[12:]
	// Orientation: SHORT, count 1, value inline (left-justified).
	put16(e[0:], 0x0112)
	put16(e[2:], 3)
	put32(e[4:], 1)
	put16(e[8:], uint16(orientation))
	// Next IFD offset 0 (already zero).
	return b
}

// Quadrant colours used by Quadrants: top-left, top-right, bottom-left,
// bottom-right of the stored image.
var (
	Red   = color.NRGBA{R: 220, G: 30, B: 30, A: 255}
	Green = color.NRGBA{R: 30, G: 200, B: 40, A: 255}
	Blue  = color.NRGBA{R: 30, G: 40, B: 220, A: 255}
	White = color.NRGBA{R: 240, G: 240, B: 240, A: 255}
)

// Quadrants returns a w×h opaque image whose four quadrants are Red (top
// left), Green (top right), Blue (bottom left) and White (bottom right), so
// any orientation can be recognised from two corners.
func Quadrants(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		left, right := Red, Green
		if y >= h/2 {
			left, right = Blue, White
		}
		row := img.Pix[y*img.Stride : y*img.Stride+4*w]
		for x := 0; x < w; x++ {
			c := left
			if x >= w/2 {
				c = right
			}
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c.R, c.G, c.B, c.A
		}
	}
	return img
}

// Translucent returns a w×h image with a colour gradient whose alpha falls
// from opaque at the left edge to fully transparent at the right edge.
func Translucent(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetNRGBA(x, y, color.NRGBA{
				R: uint8(255 * x / max(w-1, 1)),
				G: uint8(255 * y / max(h-1, 1)),
				B: 128,
				A: uint8(255 - 255*x/max(w-1, 1)),
			})
		}
	}
	return img
}

// PNGWithEXIF returns the PNG p with an eXIf chunk carrying the given
// orientation inserted after IHDR.
func PNGWithEXIF(p []byte, orientation int) []byte {
	data := TIFFOrientation(orientation, false)
	chunk := make([]byte, 8, 12+len(data))
	binary.BigEndian.PutUint32(chunk, uint32(len(data)))
	copy(chunk[4:], "eXIf")
	chunk = append(chunk, data...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	const ihdrEnd = 8 + 8 + 13 + 4 // Signature, IHDR header, data, CRC.
	out := append([]byte{}, p[:ihdrEnd]...)
	out = append(out, chunk...)
	return append(out, p[ihdrEnd:]...)
}

// PNGHeader returns the signature and IHDR chunk (with a valid CRC) of an
// 8-bit RGBA PNG claiming w×h pixels, followed by nothing else: a "pixel
// bomb" that is tiny on the wire.
func PNGHeader(w, h uint32) []byte {
	out := []byte("\x89PNG\r\n\x1a\n")
	ihdr := []byte{0, 0, 0, 13, 'I', 'H', 'D', 'R'}
	ihdr = binary.BigEndian.AppendUint32(ihdr, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0) // Depth 8, RGBA, deflate, no filter, no interlace.
	ihdr = binary.BigEndian.AppendUint32(ihdr, crc32.ChecksumIEEE(ihdr[4:]))
	return append(out, ihdr...)
}

// Deep returns a w×h image of 16-bit colour with alpha that computes its
// pixels when asked and holds no pixel buffer, so that png.Encode writes a
// large 16-bit RGBA PNG (color type 6, bit depth 16) without the memory
// the pixels would take: smooth gradients, a little translucent, which
// compress to a small file.
func Deep(w, h int) image.Image { return deep{w: w, h: h} }

type deep struct{ w, h int }

func (d deep) ColorModel() color.Model { return color.NRGBA64Model }
func (d deep) Bounds() image.Rectangle { return image.Rect(0, 0, d.w, d.h) }
func (d deep) At(x, y int) color.Color {
	return color.NRGBA64{
		R: uint16(65535 * x / max(d.w-1, 1)),
		G: uint16(65535 * y / max(d.h-1, 1)),
		B: 0x8000,
		A: 0xFFF0,
	}
}
