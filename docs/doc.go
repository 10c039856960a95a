// Package docs holds the API reference (api.md), the OpenAPI document
// (openapi.yaml) and the operations and benchmark notes of the chat engine.
// Its test checks openapi.yaml against the routes package httpapi serves and
// against recorded responses.
package docs
