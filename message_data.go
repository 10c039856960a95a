package chat

import "encoding/json"

// The typed views of Message.Data. Data stays a JSON object (what the API
// sends and stores); these methods read it into Go values, and TextData
// and CustomData make the Data of a CreateMessageInput.

// ImageData is the data of an image message.
type ImageData struct {
	// Caption is the caption, "" when none.
	Caption string `json:"caption"`
	// FileID identifies the upload.
	FileID string `json:"fileId"`
	// FileName is the uploaded file's name, made safe (SafeFileName).
	FileName string `json:"fileName"`
	// MimeType is the content type of the upload.
	MimeType string `json:"mimeType"`
	// Width and Height are those of the oriented original, in pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
	// Sizes are the renditions kept, smallest first.
	Sizes []ImageSize `json:"sizes"`
	// URLs maps each kept size to its signed link (a path under the API
	// prefix that needs no access token until it expires). The Service
	// adds it to every image message it returns; it is never stored.
	URLs map[string]string `json:"urls,omitempty"`
}

// Names of the image renditions (ImageSize.Size).
const (
	ImageSmall  = "small"
	ImageMedium = "medium"
	ImageLarge  = "large"
	ImageFull   = "full"
)

// ImageSize is one rendition of an image message.
type ImageSize struct {
	// Size is the rendition's name: ImageSmall, ImageMedium, ImageLarge
	// or ImageFull.
	Size     string `json:"size"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
	MimeType string `json:"mimeType"`
	// FileSize is the rendition's length in bytes.
	FileSize int64 `json:"fileSize"`
}

// Rendition returns the rendition named size.
func (d ImageData) Rendition(size string) (ImageSize, bool) {
	for _, s := range d.Sizes {
		if s.Size == size {
			return s, true
		}
	}
	return ImageSize{}, false
}

// FileData is the data of a file message.
type FileData struct {
	FileID   string `json:"fileId"`
	FileName string `json:"fileName"`
	MimeType string `json:"mimeType"`
	// Size is the file's length in bytes.
	Size int64 `json:"size"`
	// URL is the file's signed link (a path under the API prefix that
	// needs no access token until it expires). The Service adds it to
	// every file message it returns; it is never stored.
	URL string `json:"url,omitempty"`
}

// Text returns the text of a text message; ok is false for other types
// and for deleted messages.
func (m *Message) Text() (text string, ok bool) {
	if m.Type != MessageTypeText {
		return "", false
	}
	text, ok = m.Data["text"].(string)
	return text, ok
}

// Image returns the data of an image message; ok is false for other
// types and for deleted messages.
func (m *Message) Image() (ImageData, bool) {
	var d ImageData
	if m.Type != MessageTypeImage || m.IsDeleted || m.DecodeData(&d) != nil {
		return ImageData{}, false
	}
	return d, true
}

// File returns the data of a file message; ok is false for other types
// and for deleted messages.
func (m *Message) File() (FileData, bool) {
	var d FileData
	if m.Type != MessageTypeFile || m.IsDeleted || m.DecodeData(&d) != nil {
		return FileData{}, false
	}
	return d, true
}

// DecodeData decodes the message's data into v, a pointer to a struct or
// map, as encoding/json would decode the JSON the API sends. It is the
// way to read custom data into a type of one's own.
func (m *Message) DecodeData(v any) error {
	b, err := json.Marshal(m.Data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// TextData returns the Data of a text message holding text.
func TextData(text string) map[string]any { return map[string]any{"text": text} }

// CustomData returns the Data of a custom message holding v, which must
// encode as a JSON object (a struct or a map); the object is what the
// message stores and returns.
func CustomData(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, InvalidField("data", "must be a JSON object")
	}
	if out == nil {
		return nil, InvalidField("data", "must be a JSON object")
	}
	return out, nil
}

// dataOf returns the JSON object v encodes to, as JSON decoding makes it
// (numbers as float64), for data the Service builds itself.
func dataOf(v any) map[string]any {
	var out map[string]any
	_ = json.Unmarshal(mustJSON(v), &out)
	return out
}
