package media_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/chatengine/chat/media"
)

func ExampleProcess() {
	f, err := os.Open("testdata/photo-o6.jpg") // 1600x1000, stored sideways.
	if err != nil {
		panic(err)
	}
	defer f.Close()
	res, err := media.Process(f, media.Options{})
	switch {
	case errors.Is(err, media.ErrNotImage):
		fmt.Println("415 Unsupported Media Type")
		return
	case errors.Is(err, media.ErrTooLarge):
		fmt.Println("413 Content Too Large")
		return
	case err != nil:
		panic(err)
	}
	fmt.Println(res.SourceMIME, res.Width, "x", res.Height)
	for _, r := range res.Renditions {
		fmt.Println(r.Name, r.ContentType, r.Width, "x", r.Height)
	}
	// Output:
	// image/jpeg 1000 x 1600
	// small image/jpeg 100 x 160
	// medium image/jpeg 375 x 600
	// large image/jpeg 938 x 1500
}

func ExampleSniff() {
	mime, ok := media.Sniff([]byte("\x89PNG\r\n\x1a\n..."))
	fmt.Println(mime, ok)
	// Output: image/png true
}
