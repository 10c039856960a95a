package media

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"sync"
)

// bufPool recycles the buffers renditions are encoded into; each result is
// copied out to a slice of exactly the right size.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// pngBuffers lets the PNG encoder reuse its internal state and buffers.
type pngBuffers struct{ p sync.Pool }

func (b *pngBuffers) Get() *png.EncoderBuffer {
	v, _ := b.p.Get().(*png.EncoderBuffer)
	return v
}

func (b *pngBuffers) Put(v *png.EncoderBuffer) { b.p.Put(v) }

var pngEncoder = png.Encoder{CompressionLevel: png.DefaultCompression, BufferPool: &pngBuffers{}}

// encode encodes img as JPEG of the given quality when opaque, or as PNG.
// Neither encoder writes any metadata.
func encode(img image.Image, opaque bool, quality int) ([]byte, string, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	var ct string
	var err error
	if opaque {
		ct = "image/jpeg"
		err = jpeg.Encode(buf, jpegFast(img), &jpeg.Options{Quality: quality})
	} else {
		ct = "image/png"
		err = pngEncoder.Encode(buf, img)
	}
	if err != nil {
		return nil, "", fmt.Errorf("media: encoding %s: %w", ct, err)
	}
	return bytes.Clone(buf.Bytes()), ct, nil
}

// jpegFast returns img in a form the JPEG encoder has a fast path for. An
// opaque NRGBA image has the same bytes as an RGBA one (premultiplying by
// an alpha of 255 changes nothing), and the encoder reads *image.RGBA
// directly instead of calling At for every pixel.
func jpegFast(img image.Image) image.Image {
	if m, ok := img.(*image.NRGBA); ok {
		return &image.RGBA{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect}
	}
	return img
}
