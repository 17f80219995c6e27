// The CSI driver of the integration tests (volumes and snapshots as directories), a
// module of its own on the CSI specification's Go package.
module github.com/restoregraph/restoregraph/test/csi/driver

go 1.26.0

require (
	github.com/container-storage-interface/spec v1.14.0
	google.golang.org/grpc v1.84.0
	google.golang.org/protobuf v1.36.12
)

require (
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260928230214-8a89bd6388cc // indirect
)
