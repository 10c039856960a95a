package media

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/webp"
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

// decode decodes b, whose header gave cfg. For GIF, the first frame is
// returned, placed on a transparent canvas of the full logical screen size
// when it covers only part of it.
func decode(mime string, b []byte, cfg image.Config) (image.Image, error) {
	r := bytes.NewReader(b)
	switch mime {
	case "image/jpeg":
		return jpeg.Decode(r)
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
		// The decoder stops reading after the image data, so a file cut
		// inside a later chunk, such as the EXIF chunk that holds the
		// orientation, would pass unnoticed. The RIFF header gives the
		// file's length (Sniff saw at least its 12 bytes).
		if n := binary.LittleEndian.Uint32(b[4:]); uint64(n)+8 > uint64(len(b)) {
			return nil, errors.New("webp: truncated file")
		}
		return webp.Decode(r)
	}
	return nil, errors.New("unknown type")
}
