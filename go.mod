module paygraph

go 1.26.8

require (
	github.com/99designs/gqlgen v0.17.98
	github.com/chromedp/cdproto v0.159.0
	github.com/chromedp/chromedp v0.23.0
	github.com/go-chi/chi/v5 v5.5.0
	github.com/graph-gophers/dataloader/v7 v7.1.0
	github.com/rs/cors v1.11.1
	github.com/vektah/gqlparser/v2 v2.5.64
	go.uber.org/goleak v1.3.0
)

require (
	github.com/agnivade/levenshtein v1.2.2 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/go-viper/mapstructure/v2 v2.5.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	github.com/sosodev/duration v1.4.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
)
