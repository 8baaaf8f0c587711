"""The bad-input cases run_bad.py generates: bytes a text editor cannot hold (non-UTF-8, NUL
bytes, an enormous file, an alias bomb, very deep nesting) and specs that are no regular file."""
DEFAULT_ARGS = "estimate {spec}"  # a case's command line, {spec} its spec's path

# Generated cases: (name, bytes of the spec or None, args, expected stderr).
# In args, {spec} is the generated file's path; in the expected text it reads CORPUS/NAME.yaml.

def _deep_yaml_lists(depth):
    return b"inputs: {x: [784]}\nlayers: " + b"[" * depth + b"]" * depth + b"\n"


def _deep_yaml_mappings(depth):
    return b"inputs: {x: [784]}\nlayers: " + b"{a: " * depth + b"1" + b"}" * depth + b"\n"


def _billion_laughs():
    # Nine levels of nine aliases: 9^9 = 387,420,489 ones if anything expanded it.
    text = "description:\n  lol0: &lol0 [1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
    for i in range(1, 10):
        text += "  lol%d: &lol%d [%s]\n" % (i, i, ", ".join(["*lol%d" % (i - 1)] * 9))
    text += "inputs: {x: [784]}\nlayers: *lol9\n"
    return text.encode()


def _enormous_file():
    line = b"  - {type: ReLU}\n"
    return b"inputs: {x: [784]}\nlayers:\n" + line * ((17 << 20) // len(line))


def _deep_expression(depth):
    return (b"inputs: {x: [784]}\nlayers:\n  - {name: fc1, type: Linear, out_features: $"
            + b"(" * depth + b"1" + b")" * depth + b"}\n")


def _block_chain(depth):
    # B0 uses B1, which uses B2, ... : no recursion, only depth.
    lines = ["inputs: {x: [16]}", "blocks:"]
    for i in range(depth):
        lines += ["  B%d:" % i, "    layers:", "      - {block: B%d}" % (i + 1)]
    lines += ["  B%d:" % depth, "    layers:", "      - {type: ReLU}"]
    lines += ["layers:", "  - {name: deep, block: B0}"]
    return ("\n".join(lines) + "\n").encode()


VALID_TAIL = b"inputs: {x: [784]}\nlayers:\n  - {type: Linear, out_features: 10}\n"

GENERATED = [
    ("gen_non_utf8",
     b"name: caf\xe9  # Latin-1, not UTF-8\n" + VALID_TAIL,
     DEFAULT_ARGS,
     "CORPUS/gen_non_utf8.yaml:1:10: error: the file is not valid UTF-8: byte 0xe9 cannot appear here\n"),
    ("gen_nul_byte",
     b"inputs: {x: [784]}\nlayers:\n  - {type: Linear,\x00 out_features: 10}\n",
     DEFAULT_ARGS,
     "CORPUS/gen_nul_byte.yaml:3:19: error: the file contains a NUL byte; a spec is a text file\n"),
    # A spec saved as "Unicode" by a Windows editor: say so, rather than blame byte 0xff.
    ("gen_utf16",
     VALID_TAIL.decode().encode("utf-16"),
     DEFAULT_ARGS,
     "CORPUS/gen_utf16.yaml:1:1: error: the file is UTF-16 (it starts with a UTF-16 byte order mark); "
     "a spec must be UTF-8\n"),
    # ED A0 80 encodes the UTF-16 surrogate U+D800, which UTF-8 forbids: today it is accepted.
    ("gen_utf8_surrogate",
     b"name: \xed\xa0\x80\n" + VALID_TAIL,
     DEFAULT_ARGS,
     "CORPUS/gen_utf8_surrogate.yaml:1:7: error: the file is not valid UTF-8: byte 0xed cannot appear here\n"),
    # E0 80 AF is an overlong encoding of '/', the classic validator bypass: today it is accepted.
    ("gen_utf8_overlong",
     b"name: \xe0\x80\xaf\n" + VALID_TAIL,
     DEFAULT_ARGS,
     "CORPUS/gen_utf8_overlong.yaml:1:7: error: the file is not valid UTF-8: byte 0xe0 cannot appear here\n"),
    ("gen_enormous_file",
     _enormous_file(),
     DEFAULT_ARGS,
     "CORPUS/gen_enormous_file.yaml: error: the file is 17,825,819 bytes; specs larger than 16,777,216 bytes "
     "are refused\n"),
    ("gen_billion_laughs",
     _billion_laughs(),
     DEFAULT_ARGS,
     "CORPUS/gen_billion_laughs.yaml:10:9: error: each layer must be a mapping such as {type: Conv2d, "
     "out_channels: 64, ...}, found a list\n"),
    # yaml-cpp 0.7 refuses a node at level 500 (its parser's DepthGuard<500>; the root mapping is
    # level 1, so `layers:` holds level 2) with the message "bad file"; say what is wrong, at the
    # node one level too deep: the 499th '[', or the key inside the 498th '{'.
    ("gen_deep_yaml_lists",
     _deep_yaml_lists(100000),
     DEFAULT_ARGS,
     "CORPUS/gen_deep_yaml_lists.yaml:2:507: error: invalid YAML: the document nests more than 499 levels deep\n"),
    ("gen_deep_yaml_mappings",
     _deep_yaml_mappings(100000),
     DEFAULT_ARGS,
     "CORPUS/gen_deep_yaml_mappings.yaml:2:1998: error: invalid YAML: the document nests more than 499 levels "
     "deep\n"),
    # The expression parser recurses once per parenthesis: today this overflows the stack.
    ("gen_deep_expression",
     _deep_expression(100000),
     DEFAULT_ARGS,
     "CORPUS/gen_deep_expression.yaml:3:45: error: Linear 'fc1': out_features: the expression nests more than "
     "500 levels deep\n"),
    # Expanding blocks recurses once per level: today 20,000 levels overflow the stack.
    ("gen_block_chain_deep",
     _block_chain(20000),
     DEFAULT_ARGS,
     "CORPUS/gen_block_chain_deep.yaml:60007:5: error: expanding this nests blocks more than 500 levels deep, "
     "the limit\n"
     "CORPUS/gen_block_chain_deep.yaml:1502:17: note: the limit was reached here\n"),
    ("gen_missing_file",
     None,
     DEFAULT_ARGS,
     "CORPUS/gen_missing_file.yaml: error: cannot open the file: No such file or directory\n"),
    ("gen_directory",
     "directory",
     "check {spec}",
     "CORPUS/gen_directory.yaml: error: is a directory, not a spec file\n"),
    # A FIFO that no program writes to: opening it for reading used to wait for a writer,
    # forever (the runner's timeout kills a hang).
    ("gen_fifo_without_writer",
     "fifo",
     DEFAULT_ARGS,
     "CORPUS/gen_fifo_without_writer.yaml: error: the pipe or FIFO gave no data: no program had it open for "
     "writing, or none wrote to it (nnmem does not wait for a writer to open it)\n"),
]
