package media

import "bytes"

// Sniff detects the image type from the first bytes of b (its magic number)
// and returns its MIME type: "image/jpeg", "image/png", "image/gif" or
// "image/webp". ok is false for anything else. Sniff does not validate the
// rest of the data.
func Sniff(b []byte) (mime string, ok bool) {
	switch {
	case len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		return "image/jpeg", true
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png", true
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif", true
	case len(b) >= 12 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp", true
	}
	return "", false
}
