#!/usr/bin/env python3
"""Independent test inputs and expected values for the validator's sources,
written with the Python standard library only (zipfile, pickle, struct): never
with equishard itself.

  validate_cases.py dump-pt FILE     one line per dict entry of a torch .pt
                                     (zip or plain pickle): key, length, then each
                                     value as float32 little-endian hex (floats,
                                     rounded as float32) or decimal (ints)
  validate_cases.py dump-npy FILE    the same for a float .npy (key: row index)
  validate_cases.py cases DIR        writes the pickle/zip/npy cases the Check
                                     suite reads (test_validate_sources.c)
  validate_cases.py drop SRC OUT KEY...   SRC (.pt) without the given keys
  validate_cases.py plant FIXDIR OUT  corpus A's kaldi embeddings with planted
                                     defects (utt2embedding.pt, spk2embedding.pt,
                                     utt2spk) and expected.tsv: one line per
                                     finding the defects must produce
                                     (check, kind, key[, other key])
"""
import collections
import io
import os
import pickle
import struct
import sys
import zipfile


def f32hex(x):
    return struct.pack('<f', x).hex()


def load_pt(path):
    data = open(path, 'rb').read()
    if data[:4] == b'PK\x03\x04':
        z = zipfile.ZipFile(io.BytesIO(data))
        name = [n for n in z.namelist() if n.endswith('/data.pkl')][0]
        data = z.read(name)
    return pickle.loads(data)  # trusted fixtures only


def dump_pt(path):
    for k, v in load_pt(path).items():
        vals = [f32hex(x) if isinstance(x, float) else str(x) for x in v]
        print(k, len(v), ' '.join(vals))


def dump_npy(path):
    d = open(path, 'rb').read()
    assert d[:6] == b'\x93NUMPY'
    if d[6] == 1:
        hlen, start = struct.unpack('<H', d[8:10])[0], 10
    else:
        hlen, start = struct.unpack('<I', d[8:12])[0], 12
    header = d[start:start + hlen].decode('latin-1')
    body = d[start + hlen:]
    descr = header.split("'descr':")[1].split("'")[1]
    size = int(descr[2])
    fmt = {'<f4': '<%df', '<f8': '<%dd', '>f4': '>%df', '>f8': '>%dd'}[descr]
    vals = struct.unpack(fmt % (len(body) // size), body)
    shape = header.split("'shape':")[1].split(')')[0].strip(' (').split(',')
    dims = [int(s) for s in shape if s.strip()]
    cols = dims[-1]
    for r in range(len(vals) // cols):
        row = vals[r * cols:(r + 1) * cols]
        print(r, cols, ' '.join(f32hex(x) for x in row))


def npy_bytes(descr, shape, body, version=1, fortran=False):
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, 'True' if fortran else 'False', shape)
    pre = 10 if version == 1 else 12
    pad = 64 - (pre + len(header) + 1) % 64
    header = (header + ' ' * pad + '\n').encode('latin-1')
    lenfield = struct.pack('<H', len(header)) if version == 1 else struct.pack('<I', len(header))
    return b'\x93NUMPY' + bytes([version, 0]) + lenfield + header + body


def torch_zip(pkl, name='archive'):
    """The layout of torch.save: stored members under one folder."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, 'w', zipfile.ZIP_STORED) as z:
        z.writestr(name + '/data.pkl', pkl)
        z.writestr(name + '/byteorder', 'little')
        z.writestr(name + '/version', '3\n')
    return out.getvalue()


def write(d, name, data):
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def cases(d):
    os.makedirs(d, exist_ok=True)
    # Valid: protocol 2 in a zip, protocols 4 and 5 as plain pickles; values i/8 etc.
    good = {'k%03d' % i: [i / 8, -i / 4, float(i), 1e-3 * i] for i in range(300)}
    write(d, 'good_p2.pt', torch_zip(pickle.dumps(good, protocol=2)))
    write(d, 'good_p4.pkl', pickle.dumps(good, protocol=4))
    write(d, 'good_p5.pkl', pickle.dumps(good, protocol=5))
    tokens = {'u%d' % i: list(range(i, i + 3 * i)) + [70000, -5, 2**40] for i in range(1, 5)}
    write(d, 'tokens.pt', torch_zip(pickle.dumps(tokens, protocol=2)))
    shared = [1.5, 2.5]
    write(d, 'shared.pt', torch_zip(pickle.dumps({'a': shared, 'b': shared}, protocol=2)))
    write(d, 'single.pt', torch_zip(pickle.dumps({'one': [0.25]}, protocol=2)))
    write(d, 'empty_list.pt', torch_zip(pickle.dumps({'e': []}, protocol=2)))
    # Refused: what real pickles of other objects contain.
    write(d, 'ordereddict.pt', torch_zip(pickle.dumps({'a': collections.OrderedDict()}, protocol=2)))
    write(d, 'evil_reduce.pkl', pickle.dumps({'a': Evil()}, protocol=2))
    # Wrong types.
    write(d, 'str_value.pt', torch_zip(pickle.dumps({'a': 'x'}, protocol=2)))
    write(d, 'int_key.pt', torch_zip(pickle.dumps({1: [1.0]}, protocol=2)))
    write(d, 'nested.pt', torch_zip(pickle.dumps({'a': [[1.0, 2.0]]}, protocol=2)))
    write(d, 'top_list.pt', torch_zip(pickle.dumps([1.0, 2.0], protocol=2)))
    write(d, 'float_value.pt', torch_zip(pickle.dumps({'a': 1.0}, protocol=2)))
    write(d, 'none_value.pt', torch_zip(pickle.dumps({'a': None}, protocol=2)))
    # Not torch: a zip without data.pkl.
    out = io.BytesIO()
    with zipfile.ZipFile(out, 'w') as z:
        z.writestr('hello.txt', 'hi')
    write(d, 'no_pkl.zip', out.getvalue())
    # .npy files.
    f4 = [0.5 * i - 3 for i in range(12)]
    write(d, 'v1_f4.npy', npy_bytes('<f4', '(3, 4)', struct.pack('<12f', *f4)))
    write(d, 'v2_f8.npy', npy_bytes('<f8', '(2, 3)', struct.pack('<6d', 0.1, 0.2, 0.3, 1e39, -2.5, 7), 2))
    write(d, 'v3_be.npy', npy_bytes('>f4', '(2, 2)', struct.pack('>4f', 1, 2, 3, 4), 3))
    write(d, 'f2.npy', npy_bytes('<f2', '(1, 4)', struct.pack('<4e', 1, -2, 0.5, 65504)))
    write(d, 'vector.npy', npy_bytes('<f4', '(5,)', struct.pack('<5f', 1, 2, 3, 4, 5)))
    write(d, 'fortran.npy', npy_bytes('<f4', '(2, 2)', struct.pack('<4f', 1, 2, 3, 4), fortran=True))
    write(d, 'int.npy', npy_bytes('<i8', '(2, 2)', struct.pack('<4q', 1, 2, 3, 4)))
    write(d, 'object.npy', npy_bytes('|O', '(2,)', b'\x80\x02N.'))
    write(d, 'three_d.npy', npy_bytes('<f4', '(1, 2, 2)', struct.pack('<4f', 1, 2, 3, 4)))
    write(d, 'truncated.npy', npy_bytes('<f4', '(3, 4)', struct.pack('<12f', *f4))[:-5])
    # Past the reader's 4 MiB read size: 11000 x 100 float32 (4.4 MB), value i at
    # place i is (i % 1000) / 4 - 100 (exact in float32); whole, and cut inside
    # the second 4 MiB so that the first read is full and the second short.
    big = npy_bytes('<f4', '(11000, 100)', struct.pack('<1100000f', *((i % 1000) / 4 - 100 for i in range(1100000))))
    write(d, 'big_f4.npy', big)
    write(d, 'big_truncated.npy', big[:len(big) - 100 * 4 * 10 - 2])
    with open(os.path.join(d, 'keys_big.txt'), 'w') as f:
        f.write(''.join('b%d\n' % i for i in range(11000)))
    # Past 4 MiB of pickle (es_validate's progress): 3000 keys x 192 floats
    # (BINFLOAT, 9 bytes each: 5.2 MB), as a plain pickle and in a torch zip.
    row = [i / 64 for i in range(192)]
    big_pkl = pickle.dumps({'p%04d' % k: row[k % 192:] + row[:k % 192] for k in range(3000)},
                           protocol=4)
    write(d, 'big.pkl', big_pkl)
    write(d, 'big.pt', torch_zip(big_pkl))
    with open(os.path.join(d, 'keys3.txt'), 'w') as f:
        f.write('r0 extra fields ignored\n\nr1\n  r2  \n')
    with open(os.path.join(d, 'keys2.txt'), 'w') as f:
        f.write('r0\nr1\n')
    with open(os.path.join(d, 'keys_dup.txt'), 'w') as f:
        f.write('r0\nr1\nr0\n')


def save_pt(path, d, name):
    with open(path, 'wb') as f:
        f.write(torch_zip(pickle.dumps(d, protocol=2), name))


def drop(src, out, keys):
    d = load_pt(src)
    for k in keys:
        del d[k]
    save_pt(out, d, os.path.basename(out).rsplit('.', 1)[0])


def f32(x):
    return struct.unpack('<f', struct.pack('<f', x))[0]


def plant(fix, out):
    """Each defect trips exactly one check; spk2embedding is recomputed as
    extract_embedding.py would (float32 mean of the speaker's usable
    utterances), then one speaker is dropped and one perturbed."""
    os.makedirs(out, exist_ok=True)
    utt = load_pt(os.path.join(fix, 'utt2embedding.pt'))
    spk_of = dict(line.split() for line in open(os.path.join(fix, 'utt2spk')))
    expect = []
    utt['A01_0001'][17] = float('nan')
    expect.append(('nan', 'utt', 'A01_0001'))
    utt['A02_0002'][3] = float('-inf')
    expect.append(('inf', 'utt', 'A02_0002'))
    del utt['A03_0003']
    expect.append(('missing_utt_emb', 'utt', 'A03_0003'))
    utt['A04_0004'] = [0.0] * 192
    expect.append(('zero_norm', 'utt', 'A04_0004'))
    utt['A05_0005'] = [f32(x + 0.01) for x in utt['A06_0001']]  # A06's voice under A05
    expect.append(('far_from_centroid', 'utt', 'A05_0005'))
    utt['A01_0002'] = utt['A01_0002'][:191]
    expect.append(('wrong_dim', 'utt', 'A01_0002'))
    utt['A06_0002'] = list(utt['A06_0003'])
    order = list(utt)
    first, second = sorted(['A06_0002', 'A06_0003'], key=order.index)
    expect.append(('duplicate_vector', 'utt', second, first))
    utt['A02_0005'] = [x * 10 for x in utt['A02_0005']]
    expect.append(('abnormal_norm', 'utt', 'A02_0005'))
    spk = {}
    for s in sorted(set(spk_of.values())):
        rows = [v for k, v in utt.items() if spk_of[k] == s and len(v) == 192
                and all(x == x and abs(x) != float('inf') for x in v)]
        spk[s] = [f32(sum(col) / len(rows)) for col in zip(*rows)]
    del spk['A02']
    expect.append(('missing_spk_emb', 'spk', 'A02'))
    spk['A03'] = [f32(x * 1.01) for x in spk['A03']]
    expect.append(('spk_mean_mismatch', 'spk', 'A03'))
    save_pt(os.path.join(out, 'utt2embedding.pt'), utt, 'utt2embedding')
    save_pt(os.path.join(out, 'spk2embedding.pt'), spk, 'spk2embedding')
    with open(os.path.join(out, 'utt2spk'), 'w') as f:
        f.writelines('%s %s\n' % kv for kv in sorted(spk_of.items()))
    with open(os.path.join(out, 'expected.tsv'), 'w') as f:
        f.writelines('\t'.join(e) + '\n' for e in sorted(expect))


class Evil:
    def __reduce__(self):
        return (os.system, ('echo pwned',))


if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'dump-pt':
        dump_pt(sys.argv[2])
    elif cmd == 'dump-npy':
        dump_npy(sys.argv[2])
    elif cmd == 'cases':
        cases(sys.argv[2])
    elif cmd == 'drop':
        drop(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif cmd == 'plant':
        plant(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
