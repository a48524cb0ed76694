package db

import "github.com/hbtsdb/hbtsdb/write"

// CheckWrite validates req as Write would now, and writes nothing
// (write.Writer.Check): the error of a request Write would refuse whole, or the
// rejections it would list, nil when it would write everything.
func (db *DB) CheckWrite(req *write.Request) ([]write.Rejection, error) {
	return db.writer.Check(req, db.now())
}
