package bucket_test

import (
	"fmt"

	"github.com/restoregraph/restoregraph/velero/bucket"
)

// A backup named where Velero keeps it: the tarball's key, and the store's options as a
// BackupStorageLocation's config names them.
func ExampleParse() {
	u, err := bucket.Parse("s3://backups/cluster-a/nightly?region=eu-west-1&s3ForcePathStyle=true", "")
	if err != nil {
		panic(err)
	}
	fmt.Println(u.Bucket, u.Key, u.S3.Region, u.S3.PathStyle)
	fmt.Println(u.Name())
	// Output:
	// backups cluster-a/backups/nightly/nightly.tar.gz eu-west-1 true
	// nightly
}
