module github.com/restoregraph/restoregraph/bench/peers

go 1.26.8

replace github.com/restoregraph/restoregraph => ../..

require (
	github.com/hashicorp/terraform v0.14.11
	github.com/heimdalr/dag v1.5.0
	github.com/restoregraph/restoregraph v0.0.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/agext/levenshtein v1.2.2 // indirect
	github.com/apparentlymart/go-textseg/v13 v13.0.0 // indirect
	github.com/emirpasic/gods v1.18.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.0.0 // indirect
	github.com/hashicorp/hcl/v2 v2.9.1 // indirect
	github.com/mitchellh/go-wordwrap v1.0.0 // indirect
	github.com/zclconf/go-cty v1.8.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/text v0.40.0 // indirect
)
