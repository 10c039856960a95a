package media

import (
	"bytes"
	"errors"
	"image"
	"image/draw"
	"image/gif"
	"image/png"

	"golang.org/x/image/webp"

	"github.com/chatengine/chat/media/internal/jpeg"
)

// decodeConfig reads only the header of b (of the sniffed type mime) and
// returns its dimensions.
func decodeConfig(mime string, b []byte) (image.Config, error) {
	r := bytes.NewReader(b)
	switch mime {
	case "image/jpeg":
		return jpeg.DecodeConfig(r)
	case "image/png":
		return png.DecodeConfig(r)
	case "image/gif":
		return gif.DecodeConfig(r)
	case "image/webp":
		return webp.DecodeConfig(r)
	}
	return image.Config{}, errors.New("unknown type")
}

// jpegShift returns log2 of the largest JPEG decoding reduction (at most 8)
// that still leaves the longest side of a w×h image at least need pixels
// long. need 0 means full size.
func jpegShift(w, h, need int) uint {
	if need <= 0 {
		return 0
	}
	longest := max(w, h)
	shift := uint(0)
	for shift < 3 && (longest+(2<<shift)-1)>>(shift+1) >= need {
		shift++
	}
	return shift
}

// decode decodes b, whose header gave cfg. For JPEG, the image may be
// decoded at a reduced size (a power of two) that is still at least need
// pixels on its longest side. For GIF, the first frame is returned, placed
// on a transparent canvas of the full logical screen size when it covers
// only part of it.
func decode(mime string, b []byte, cfg image.Config, need int) (image.Image, error) {
	r := bytes.NewReader(b)
	switch mime {
	case "image/jpeg":
		return jpeg.DecodeScaled(r, jpegShift(cfg.Width, cfg.Height, need))
	case "image/png":
		return png.Decode(r)
	case "image/gif":
		m, err := gif.Decode(r)
		if err != nil {
			return nil, err
		}
		screen := image.Rect(0, 0, cfg.Width, cfg.Height)
		if m.Bounds() == screen {
			return m, nil
		}
		canvas := image.NewNRGBA(screen)
		draw.Draw(canvas, m.Bounds(), m, m.Bounds().Min, draw.Src)
		return canvas, nil
	case "image/webp":
		return webp.Decode(r)
	}
	return nil, errors.New("unknown type")
}
