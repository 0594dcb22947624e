package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Error is an OpenAI-shaped error with its HTTP status; its body is
// {"error": {"message", "type", "param", "code"}}.
type Error struct {
	Status  int
	Message string
	Type    string
	Param   string // "" is written as null
	Code    string // "" is written as null
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%d %s (param %s)", e.Status, e.Message, e.Param)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Message)
}

// Body is the JSON the client receives.
func (e *Error) Body() []byte {
	nullable := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": e.Message, "type": e.Type, "param": nullable(e.Param), "code": nullable(e.Code)}})
	return b
}

// Write sends the error as the HTTP response.
func (e *Error) Write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	w.Write(e.Body())
}

// The error types of the API.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeServer         = "server_error"
)

// BadRequest is a 400 invalid_request_error naming the field param.
func BadRequest(param, code, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Param: param, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unauthorized is the 401 of a missing or wrong API key.
func Unauthorized(msg string) *Error {
	return &Error{Status: http.StatusUnauthorized, Type: TypeInvalidRequest, Code: "invalid_api_key", Message: msg}
}

// NotFound is the 404 of an unknown path.
func NotFound(method, path string) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeInvalidRequest, Code: "unknown_url",
		Message: fmt.Sprintf("Unrecognized request URL (%s: %s).", method, path)}
}

// MethodNotAllowed is the 405 of a known path asked with another method.
func MethodNotAllowed(method, path string) *Error {
	return &Error{Status: http.StatusMethodNotAllowed, Type: TypeInvalidRequest, Code: "method_not_allowed",
		Message: fmt.Sprintf("Method %s is not allowed for %s.", method, path)}
}

// ServerError is a 500 with the cause.
func ServerError(err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Type: TypeServer, Message: "The server had an error while processing your request: " + err.Error()}
}
