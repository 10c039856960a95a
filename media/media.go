package media

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"io"
	"sync"
)

// Default limits and settings, used when the corresponding Options field is
// zero.
const (
	// DefaultMaxPixels is the largest width×height accepted by default.
	DefaultMaxPixels = 50_000_000
	// DefaultMaxBytes is the largest input accepted by default (50 MiB).
	DefaultMaxBytes = 50 << 20
	// DefaultMaxDecodedBytes is the largest decoded size of an image
	// accepted by default (256 MiB): a 50-megapixel 8-bit RGBA PNG (200
	// MB) passes, a 7000×7000 16-bit RGBA PNG (392 MB) does not.
	DefaultMaxDecodedBytes = 256 << 20
	// DefaultJPEGQuality is the JPEG quality used by default: 85, a common
	// choice for photographs on the web, whose artefacts are hard to see at
	// normal viewing size.
	DefaultJPEGQuality = 85
)

// Options controls Process. The zero value is ready to use.
type Options struct {
	// MaxPixels is the largest accepted width×height of the input image.
	// It is checked against the image header, before any pixel is decoded.
	// Zero means DefaultMaxPixels (50 million).
	MaxPixels int64
	// MaxDecodedBytes is the largest accepted memory of the decoded
	// pixels, Header.DecodedBytes: width × height × the bytes of a decoded
	// pixel, computed from the header before any pixel is decoded (a
	// 16-bit RGBA PNG takes 8 bytes a pixel where the pixel limit alone
	// counts 1). Zero means DefaultMaxDecodedBytes (256 MiB).
	MaxDecodedBytes int64
	// MaxBytes is the largest accepted size of the encoded input in bytes.
	// Process reads at most one byte more than this. Zero means
	// DefaultMaxBytes (50 MiB).
	MaxBytes int64
	// KeepFull also produces the "full" rendition, re-encoded (and so
	// stripped of metadata) at the original, EXIF-oriented dimensions.
	KeepFull bool
	// JPEGQuality is the quality, 1 to 100, of JPEG renditions. Zero means
	// DefaultJPEGQuality (85); values outside 1..100 are clamped.
	JPEGQuality int
}

func (o Options) withDefaults() Options {
	if o.MaxPixels <= 0 {
		o.MaxPixels = DefaultMaxPixels
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxDecodedBytes <= 0 {
		o.MaxDecodedBytes = DefaultMaxDecodedBytes
	}
	if o.JPEGQuality == 0 {
		o.JPEGQuality = DefaultJPEGQuality
	}
	o.JPEGQuality = min(max(o.JPEGQuality, 1), 100)
	return o
}

// Size is a named rendition size: the image is scaled to fit within
// Max×Max pixels (Max is the longest side), never upscaled.
type Size struct {
	Name string
	Max  int
}

// Sizes lists the bounded renditions from smallest to largest: small fits in
// 160 px, medium in 600 px and large in 1500 px on the longest side. The
// renditions of a Result come in this order, followed by "full" when
// Options.KeepFull is set. Treat it as read-only.
var Sizes = []Size{
	{Name: "small", Max: 160},
	{Name: "medium", Max: 600},
	{Name: "large", Max: 1500},
}

// FullName is the name of the rendition at the original dimensions.
const FullName = "full"

// Rendition is one encoded output image.
type Rendition struct {
	// Name is "small", "medium", "large" or "full".
	Name string
	// ContentType is "image/jpeg", or "image/png" when the image has any
	// pixel that is not fully opaque.
	ContentType string
	// Width and Height are the rendition's pixel dimensions.
	Width, Height int
	// Data is the encoded image, without any metadata.
	Data []byte
}

// Result is the outcome of processing one image.
type Result struct {
	// SourceMIME is the detected type of the input: "image/jpeg",
	// "image/png", "image/gif" or "image/webp".
	SourceMIME string
	// Width and Height are the original dimensions after EXIF orientation
	// (a portrait photo stored sideways reports its portrait size).
	Width, Height int
	// Renditions are small, medium and large, then full if requested.
	Renditions []Rendition
}

// Rendition returns the rendition with the given name, or nil.
func (r *Result) Rendition(name string) *Rendition {
	for i := range r.Renditions {
		if r.Renditions[i].Name == name {
			return &r.Renditions[i]
		}
	}
	return nil
}

var (
	// ErrNotImage means the input is not a decodable JPEG, PNG, GIF or WebP
	// image (HTTP callers answer 415). Truncated and corrupt images are
	// reported with this error too.
	ErrNotImage = errors.New("media: not a supported image (JPEG, PNG, GIF or WebP)")
	// ErrTooLarge means the input exceeds Options.MaxBytes, or its header
	// declares more than Options.MaxPixels pixels or more than
	// Options.MaxDecodedBytes of decoded pixels (HTTP callers answer 413).
	// Both are enforced before any pixel data is decoded.
	ErrTooLarge = errors.New("media: image too large")
)

// preShrink enables the box-filter reduction of large decoded Y'CbCr and
// Gray images before resizing. Benchmarks turn it off to measure what it
// saves.
var preShrink = true

// inputPool recycles the buffers Process reads its input into.
var inputPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Process reads an image from r (at most opt.MaxBytes bytes) and produces its
// renditions. See ProcessBytes.
func Process(r io.Reader, opt Options) (*Result, error) {
	opt = opt.withDefaults()
	buf := inputPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		// Do not keep very large buffers alive in the pool.
		if buf.Cap() <= 64<<20 {
			inputPool.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(io.LimitReader(r, opt.MaxBytes+1)); err != nil {
		return nil, fmt.Errorf("media: reading input: %w", err)
	}
	if int64(buf.Len()) > opt.MaxBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, opt.MaxBytes)
	}
	// The renditions never alias the input, so the buffer can be reused.
	return ProcessBytes(buf.Bytes(), opt)
}

// ProcessBytes decodes the image in b and produces its renditions: small,
// medium and large (and full if opt.KeepFull), EXIF-oriented and re-encoded
// without metadata. It returns an error wrapping ErrNotImage or ErrTooLarge
// for unsupported or oversized input, checked by ReadHeader before any
// pixel is decoded. It is safe for concurrent use and does
// not retain b.
func ProcessBytes(b []byte, opt Options) (*Result, error) {
	opt = opt.withDefaults()
	hd, err := ReadHeader(b, opt)
	if err != nil {
		return nil, err
	}
	mime := hd.MIME
	cfg := image.Config{Width: hd.Width, Height: hd.Height}
	orient := orientation(mime, b)

	img, err := decode(mime, b, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotImage, err)
	}
	// The largest rendition decides how much detail must be kept.
	if !opt.KeepFull && preShrink {
		img = shrink(img, shrinkShift(cfg.Width, cfg.Height, Sizes[len(Sizes)-1].Max))
	}
	return render(img, cfg.Width, cfg.Height, orient, mime, opt)
}

// fit returns the dimensions of a w×h image scaled to fit within max×max,
// keeping its aspect ratio; images that already fit are not enlarged.
func fit(w, h, limit int) (int, int) {
	if w <= limit && h <= limit {
		return w, h
	}
	if w >= h {
		return limit, max(1, int(float64(h)*float64(limit)/float64(w)+0.5))
	}
	return max(1, int(float64(w)*float64(limit)/float64(h)+0.5)), limit
}

// dims returns the width and height of img.
func dims(img image.Image) (int, int) {
	b := img.Bounds()
	return b.Dx(), b.Dy()
}
