package media

import (
	"fmt"
	"image"
	"image/color"
)

// Header is what an image's header tells before any pixel is decoded.
type Header struct {
	// MIME is the sniffed type: "image/jpeg", "image/png", "image/gif" or
	// "image/webp".
	MIME string
	// Width and Height are the stored dimensions, before EXIF orientation.
	Width, Height int
	// DecodedBytes is the memory the decoder allocates for the pixels:
	// width × height × the bytes of one decoded pixel, which follow from
	// the header. PNG: 1 (gray or paletted, any bit depth), 2 (16-bit
	// gray), 4 (8-bit colour, with or without alpha) or 8 (16-bit colour),
	// twice that for an interlaced PNG (each pass is decoded apart, then
	// copied). JPEG: one byte per sample of each component at its
	// sampling (1.5 for 4:2:0 colour, 3 for 4:4:4, 1 for gray), 4 more
	// for CMYK, and for a progressive JPEG 4 bytes per DCT coefficient
	// (kept for all scans). GIF: 1 (paletted) plus 4 for the canvas a
	// partial first frame is placed on. WebP: 1.5 (lossy, in whole 16×16
	// macroblocks), 10.5 (lossy with alpha, whose plane is decoded as a
	// lossless image first) or 8 (lossless: the pixels and one transformed
	// copy).
	DecodedBytes int64
	// Memory estimates the peak memory processing the image takes beyond
	// its encoded input: DecodedBytes, the working images of the first
	// resize (at most 4 bytes a pixel of the large size's width by the
	// image's height, and of the large rendition itself) and, with
	// Options.KeepFull, an oriented copy and the encoding of the full
	// rendition (8 bytes a pixel). Callers that process several images at
	// once can bound their total with it.
	Memory int64
}

// ReadHeader sniffs the image in b and reads its header, without
// decoding any pixel, then checks opt's limits: it returns an error
// wrapping ErrNotImage when b is not a JPEG, PNG, GIF or WebP image with
// a readable header, and one wrapping ErrTooLarge when b is longer than
// opt.MaxBytes, or its header declares more than opt.MaxPixels pixels or
// more than opt.MaxDecodedBytes of decoded pixels. ProcessBytes makes the
// same checks first.
func ReadHeader(b []byte, opt Options) (Header, error) {
	opt = opt.withDefaults()
	if int64(len(b)) > opt.MaxBytes {
		return Header{}, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, opt.MaxBytes)
	}
	mime, ok := Sniff(b)
	if !ok {
		return Header{}, ErrNotImage
	}
	cfg, err := decodeConfig(mime, b)
	if err != nil {
		return Header{}, fmt.Errorf("%w: %v", ErrNotImage, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return Header{}, fmt.Errorf("%w: empty image", ErrNotImage)
	}
	h := Header{MIME: mime, Width: cfg.Width, Height: cfg.Height}
	if px := int64(cfg.Width) * int64(cfg.Height); px > opt.MaxPixels {
		return h, fmt.Errorf("%w: %dx%d is more than %d pixels", ErrTooLarge, cfg.Width, cfg.Height, opt.MaxPixels)
	}
	h.DecodedBytes = decodedBytes(mime, b, cfg)
	if h.DecodedBytes > opt.MaxDecodedBytes {
		return h, fmt.Errorf("%w: %dx%d takes %d bytes decoded, more than %d", ErrTooLarge, cfg.Width, cfg.Height, h.DecodedBytes, opt.MaxDecodedBytes)
	}
	h.Memory = h.DecodedBytes + workBytes(cfg.Width, cfg.Height, opt.KeepFull)
	return h, nil
}

// decodedBytes returns what decoding the image b, whose header gave cfg,
// allocates for its pixels (see Header.DecodedBytes).
func decodedBytes(mime string, b []byte, cfg image.Config) int64 {
	px := int64(cfg.Width) * int64(cfg.Height)
	switch mime {
	case "image/png":
		n := px * pixelBytes(cfg.ColorModel)
		// The IHDR chunk comes first (png.DecodeConfig checked it); its
		// last byte is the interlace method.
		if len(b) > 28 && b[28] != 0 {
			n *= 2
		}
		return n
	case "image/jpeg":
		return jpegBytes(b, cfg)
	case "image/gif":
		return px * 5
	case "image/webp":
		// Lossy: Y'CbCr 4:2:0 in whole 16×16 macroblocks. Its alpha
		// channel is decoded as a lossless image (NRGBA and a transformed
		// copy) before its plane is extracted.
		// The color model of an extended file (VP8X) tells only whether it
		// has alpha, so the chunks decide.
		var lossy, alpha bool
		walkWebP(b, func(fourCC string, _ []byte) bool {
			switch fourCC {
			case "ALPH":
				alpha = true
			case "VP8 ":
				lossy = true
				return false
			case "VP8L":
				return false
			}
			return true
		})
		if !lossy {
			return px * 8
		}
		n := int64((cfg.Width+15)/16) * int64((cfg.Height+15)/16) * 384
		if alpha {
			n += px * 9
		}
		return n
	}
	return px * 8
}

// pixelBytes is the size of one pixel of the image type the standard
// decoders return for color model m; 8, the largest, for any other.
func pixelBytes(m color.Model) int64 {
	switch m {
	case color.GrayModel:
		return 1
	case color.Gray16Model:
		return 2
	case color.RGBAModel, color.NRGBAModel:
		return 4
	case color.RGBA64Model, color.NRGBA64Model:
		return 8
	}
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	return 8
}

// jpegBytes returns what image/jpeg allocates to decode the JPEG b: its
// component planes, rounded up to whole MCUs, a CMYK image for four
// components, and the coefficients of every block for a progressive JPEG.
// When no frame header is found (DecodeConfig found one, so this does not
// happen) it assumes the worst: full sampling, progressive.
func jpegBytes(b []byte, cfg image.Config) int64 {
	var sampling [][2]int64
	progressive := true
	walkJPEG(b, func(marker byte, seg []byte) bool {
		// Start of frame: baseline, extended sequential, progressive.
		if marker < 0xC0 || marker > 0xC2 {
			return true
		}
		if len(seg) < 6 {
			return false
		}
		n := int(seg[5])
		if n == 0 || len(seg) < 6+3*n {
			return false
		}
		progressive = marker == 0xC2
		for i := range n {
			hv := seg[6+3*i+1]
			sampling = append(sampling, [2]int64{max(int64(hv>>4), 1), max(int64(hv&15), 1)})
		}
		return false
	})
	w, h := int64(cfg.Width), int64(cfg.Height)
	if sampling == nil {
		comps := map[color.Model]int64{color.GrayModel: 1, color.CMYKModel: 4}[cfg.ColorModel]
		if comps == 0 {
			comps = 3
		}
		for range comps {
			sampling = append(sampling, [2]int64{1, 1})
		}
	}
	var hmax, vmax int64 = 1, 1
	for _, s := range sampling {
		hmax, vmax = max(hmax, s[0]), max(vmax, s[1])
	}
	// Minimum coded units across and down; each holds h×v blocks of 8×8
	// samples of every component.
	mx, my := (w+8*hmax-1)/(8*hmax), (h+8*vmax-1)/(8*vmax)
	var n int64
	for _, s := range sampling {
		blocks := mx * s[0] * my * s[1]
		n += blocks * 64
		if progressive {
			n += blocks * 64 * 4
		}
	}
	if len(sampling) == 4 {
		n += w * h * 4
	}
	return n
}

// workBytes estimates the memory processing a w×h image takes beside its
// decoded pixels (see Header.Memory).
func workBytes(w, h int, keepFull bool) int64 {
	large := int64(Sizes[len(Sizes)-1].Max)
	n := 4*min(int64(w), large)*int64(h) + 4*large*large
	if keepFull {
		n += 8 * int64(w) * int64(h)
	}
	return n
}
