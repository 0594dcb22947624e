package tensorboard

import (
	"encoding/binary"
	"hash/crc32"
)

// castagnoli is the CRC-32C table TFRecord checksums use.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TFRecord's masked CRC-32C of b: the checksum rotated right
// by 15 bits plus 0xa282ead8, so that a CRC of data holding CRCs is not
// degenerate.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// record frames data as one TFRecord: its length as a little-endian
// uint64, the masked CRC of those 8 bytes, the data, the masked CRC of the
// data.
func record(data []byte) []byte {
	out := make([]byte, 0, 8+4+len(data)+4)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(data)))
	out = binary.LittleEndian.AppendUint32(out, maskedCRC(out[:8]))
	out = append(out, data...)
	return binary.LittleEndian.AppendUint32(out, maskedCRC(data))
}
