package media

import (
	"bytes"
	"encoding/binary"
)

// orientation returns the EXIF Orientation (1 to 8) stored in the image b of
// the given type, or 1 (no transformation) when there is none or it cannot be
// parsed. JPEG keeps EXIF in an APP1 segment, PNG in an eXIf chunk and WebP in
// an EXIF chunk; GIF has no EXIF.
func orientation(mime string, b []byte) int {
	var tiff []byte
	switch mime {
	case "image/jpeg":
		tiff = jpegEXIF(b)
	case "image/png":
		tiff = pngEXIF(b)
	case "image/webp":
		tiff = webpEXIF(b)
	}
	if tiff == nil {
		return 1
	}
	return tiffOrientation(tiff)
}

var exifHeader = []byte("Exif\x00\x00")

// jpegEXIF returns the TIFF structure of the first APP1 Exif segment before
// the first scan, or nil.
func jpegEXIF(b []byte) []byte {
	var tiff []byte
	walkJPEG(b, func(marker byte, seg []byte) bool {
		if marker == 0xE1 && bytes.HasPrefix(seg, exifHeader) {
			tiff = seg[len(exifHeader):]
			return false
		}
		return true
	})
	return tiff
}

// walkJPEG calls fn with the marker and contents of each segment of
// the JPEG b that has a length, up to the first scan, while fn returns
// true. It stops quietly at anything malformed.
func walkJPEG(b []byte, fn func(marker byte, seg []byte) bool) {
	if len(b) < 2 || b[0] != 0xFF || b[1] != 0xD8 {
		return
	}
	i := 2
	for i+4 <= len(b) {
		if b[i] != 0xFF {
			return
		}
		marker := b[i+1]
		switch {
		case marker == 0xFF: // Fill byte.
			i++
			continue
		case marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8): // TEM, RSTn, SOI: no length.
			i += 2
			continue
		case marker == 0xDA || marker == 0xD9: // SOS, EOI: no more metadata.
			return
		}
		n := int(binary.BigEndian.Uint16(b[i+2:]))
		if n < 2 || i+2+n > len(b) {
			return
		}
		if !fn(marker, b[i+4:i+2+n]) {
			return
		}
		i += 2 + n
	}
}

// pngEXIF returns the contents of the eXIf chunk, or nil.
func pngEXIF(b []byte) []byte {
	i := 8 // Signature.
	for i+12 <= len(b) {
		n := int(binary.BigEndian.Uint32(b[i:]))
		typ := string(b[i+4 : i+8])
		if n < 0 || n > len(b)-i-12 {
			return nil
		}
		if typ == "eXIf" {
			return b[i+8 : i+8+n]
		}
		if typ == "IEND" {
			return nil
		}
		i += 12 + n
	}
	return nil
}

// webpEXIF returns the contents of the EXIF chunk of an extended WebP file,
// or nil.
func webpEXIF(b []byte) []byte {
	var exif []byte
	walkWebP(b, func(fourCC string, data []byte) bool {
		if fourCC == "EXIF" {
			// Some writers keep the JPEG-style "Exif\0\0" prefix.
			exif = bytes.TrimPrefix(data, exifHeader)
			return false
		}
		return true
	})
	return exif
}

// walkWebP calls fn with the FourCC and contents of each chunk of the WebP
// file b, while fn returns true. It stops quietly at anything malformed.
func walkWebP(b []byte, fn func(fourCC string, data []byte) bool) {
	i := 12 // "RIFF", size, "WEBP".
	for i+8 <= len(b) {
		n := int(binary.LittleEndian.Uint32(b[i+4:]))
		if n < 0 || n > len(b)-i-8 {
			return
		}
		if !fn(string(b[i:i+4]), b[i+8:i+8+n]) {
			return
		}
		i += 8 + n + n&1 // Chunks are padded to an even size.
	}
}

// tiffOrientation reads tag 0x0112 (Orientation) from IFD0 of the TIFF
// structure t, returning 1 when it is absent or invalid.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	if bo.Uint16(t[2:]) != 42 {
		return 1
	}
	off := uint64(bo.Uint32(t[4:]))
	if off+2 > uint64(len(t)) {
		return 1
	}
	n := int(bo.Uint16(t[off:]))
	for k := 0; k < n; k++ {
		e := off + 2 + 12*uint64(k)
		if e+12 > uint64(len(t)) {
			return 1
		}
		if bo.Uint16(t[e:]) != 0x0112 {
			continue
		}
		var v uint32
		switch bo.Uint16(t[e+2:]) { // Field type.
		case 3: // SHORT, the type the standard prescribes.
			v = uint32(bo.Uint16(t[e+8:]))
		case 4: // LONG, written by a few tools.
			v = bo.Uint32(t[e+8:])
		default:
			return 1
		}
		if v >= 1 && v <= 8 {
			return int(v)
		}
		return 1
	}
	return 1
}
