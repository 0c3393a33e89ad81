"""A test trial that logs artifacts (ctx.artifacts): the hparam `mode` says which.

good: a 2x2 PNG at steps 1 and 2 (made with zlib and struct, no Pillow), a table at step 2,
a text, a binary file, and an HTML page and an SVG drawing logged as plain files.
refused: a bad name (caught, its error printed), then a file over the limit
(SHIPYARD_ARTIFACT_MAX_BYTES, set by the test's config), left to fail the run.

The test imports png() and the contents below to compare what the master serves.
"""

import struct
import zlib

TABLE = [{"epoch": 1, "accuracy": 0.5, "label": "cat"}, {"epoch": 2, "accuracy": 0.75}]
TEXT = "a note from the trial\nsecond line: <b>not bold</b>\n"
BINARY = bytes(range(256)) * 8
HTML = "<!doctype html><title>x</title><script>document.title = 'ran'</script>"
SVG = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


def png(step: int) -> bytes:
    """A valid 2x2 RGB PNG whose colour depends on the step."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    pixel = bytes([40 * step % 256, 200, 255 - 40 * step % 256])
    raw = b"".join(b"\x00" + pixel * 2 for _ in range(2))  # filter byte, then the row
    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def main() -> None:
    from pathlib import Path

    import shipyard.core

    with shipyard.core.init() as ctx:
        mode = ctx.info.hparams.get("mode", "good")
        if mode == "refused":
            try:
                ctx.artifacts.log_text("bad/name", "x")
            except ValueError as exc:
                print(f"refused: {exc}", flush=True)
            Path("big.bin").write_bytes(b"x" * 2000)
            ctx.artifacts.log_file("big.bin", steps_completed=1)
            return
        for step in (1, 2):
            ctx.artifacts.log_image("samples.png", png(step), steps_completed=step)
            ctx.train.report_training_metrics(step, {"loss": 1.0 / step})
        ctx.artifacts.log_table("predictions", TABLE, steps_completed=2)
        ctx.artifacts.log_text("notes", TEXT)
        Path("weights.bin").write_bytes(BINARY)
        ctx.artifacts.log_file("weights.bin")
        Path("page.html").write_text(HTML)
        ctx.artifacts.log_file("page.html")
        Path("drawing.svg").write_text(SVG)
        ctx.artifacts.log_file("drawing.svg", kind="file")
        ctx.train.report_validation_metrics(2, {"val_loss": 0.5})
        print("logged", flush=True)


if __name__ == "__main__":
    main()
