#!/usr/bin/env python3
"""Writes or checks gRPC-framed pb.gubernator GetRateLimits messages, hand-encoded (no protoc).

  grpc_body.py encode OUT ITEMS NAME KEY_PREFIX HITS LIMIT DURATION_MS
      writes a 5-byte gRPC prefix + GetRateLimitsReq with ITEMS RateLimitReq items
      (unique_key = KEY_PREFIX when ITEMS is 1, else KEY_PREFIX-<i>).
  grpc_body.py check FILE
      decodes a gRPC-framed GetRateLimitsResp; prints one line per item; exits 1 if an item has an error.
"""
import struct
import sys


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(number, data):
    return varint(number << 3 | 2) + varint(len(data)) + data


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def encode(out, items, name, key_prefix, hits, limit, duration):
    body = b""
    for i in range(items):
        key = key_prefix if items == 1 else "%s-%d" % (key_prefix, i)
        item = (field_bytes(1, name.encode()) + field_bytes(2, key.encode())
                + field_varint(3, hits) + field_varint(4, limit) + field_varint(5, duration))
        body += field_bytes(1, item)
    with open(out, "wb") as f:
        f.write(b"\x00" + struct.pack(">I", len(body)) + body)


def read_varint(data, i):
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def fields(data):
    i = 0
    while i < len(data):
        key, i = read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(data, i)
        elif wire == 2:
            length, i = read_varint(data, i)
            value, i = data[i:i + length], i + length
        else:
            raise ValueError("unexpected wire type %d" % wire)
        yield number, value


def check(path):
    data = open(path, "rb").read()
    if len(data) < 5:
        print("empty gRPC response (see grpc-status in the trailers)")
        return 1
    length = struct.unpack(">I", data[1:5])[0]
    failed = 0
    for number, item in fields(data[5:5 + length]):
        if number != 1:
            continue
        resp = dict(fields(item))
        status = ["UNDER_LIMIT", "OVER_LIMIT"][resp.get(1, 0)]
        error = resp.get(5, b"").decode()
        print("status=%s limit=%d remaining=%d reset_time=%d error=%r"
              % (status, resp.get(2, 0), resp.get(3, 0), resp.get(4, 0), error))
        failed |= bool(error)
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1] == "encode":
        a = sys.argv[2:]
        encode(a[0], int(a[1]), a[2], a[3], int(a[4]), int(a[5]), int(a[6]))
    elif sys.argv[1] == "check":
        sys.exit(check(sys.argv[2]))
    else:
        sys.exit(__doc__)
