"""A tool's result as each provider's tool output (mcp_sync/toolbox/_results.py), block by
block as its module's table says, and the cleaning of the text a result carries.

Pure functions over results built here: the Toolbox tests (tests/toolbox) run the same
conversions against real servers; these pin every row of the table, exactly.
"""

from __future__ import annotations

from typing import Any, List

from mcp_sync import types
from mcp_sync.toolbox._results import (
    anthropic_content,
    clean_result,
    langchain_content,
    openai_text,
    responses_output,
)

PNG = types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png")  # 5 bytes
BMP = types.ImageContent(type="image", data="aGk=", mime_type="image/bmp")  # 2 bytes


def embedded(uri: str, blob: str, mime: Any = None) -> types.EmbeddedResource:
    return types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
        uri=uri, mime_type=mime, blob=blob))


def result(*content: Any, structured: Any = None, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), structured_content=structured,
                                is_error=error)


EVERY_KIND = result(
    types.TextContent(type="text", text="hello"),
    PNG,
    BMP,
    types.AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
    types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
        uri="file:///a.txt", mime_type="text/plain", text="inside")),
    embedded("file:///d/r.pdf", "JVBERg==", "application/pdf"),
    embedded("file:///i.gif", "R0lG", "image/gif"),
    embedded("file:///b.bin", "AQID"),
    types.ResourceLink(type="resource_link", uri="file:///l", name="link\x1bname",
                       mime_type="text/csv", description="a list"),
    structured={"n": 1},
)
DESCRIBED = [
    "[audio: audio/wav, 3 bytes; audio cannot be passed on here]",
    "[resource file:///a.txt (text/plain)]\ninside",
]
LINK = "[resource link linkname: file:///l, text/csv, a list]"


def test_chat_completions_text_describes_every_image_and_file() -> None:
    carries = "this reply can carry text only"
    assert openai_text(EVERY_KIND).split("\n") == [
        "hello",
        f"[image: image/png, 5 bytes; {carries}]",
        f"[image: image/bmp, 2 bytes; {carries}]",
        DESCRIBED[0],
        *DESCRIBED[1].split("\n"),
        f"[file file:///d/r.pdf: application/pdf, 4 bytes; {carries}]",
        f"[image file:///i.gif: image/gif, 3 bytes; {carries}]",
        f"[file file:///b.bin: application/octet-stream, 3 bytes; {carries}]",
        LINK,
        '{"n": 1}',
    ]


def test_responses_take_images_and_pdfs_and_describe_the_rest() -> None:
    assert responses_output(EVERY_KIND) == [
        {"type": "input_text", "text": "hello"},
        {"type": "input_image", "image_url": "data:image/png;base64,aGVsbG8="},
        {"type": "input_text", "text": "[image: image/bmp, 2 bytes; not supported here]"},
        *[{"type": "input_text", "text": text} for text in DESCRIBED],
        {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERg==",
         "filename": "r.pdf"},
        {"type": "input_image", "image_url": "data:image/gif;base64,R0lG"},
        {"type": "input_text",
         "text": "[file file:///b.bin: application/octet-stream, 3 bytes; not supported here]"},
        {"type": "input_text", "text": LINK},
        {"type": "input_text", "text": '{"n": 1}'},
    ]


def test_anthropic_takes_images_and_pdfs_and_describes_the_rest() -> None:
    def source(mime: str, data: str) -> Any:
        return {"type": "base64", "media_type": mime, "data": data}

    assert anthropic_content(EVERY_KIND) == [
        {"type": "text", "text": "hello"},
        {"type": "image", "source": source("image/png", "aGVsbG8=")},
        {"type": "text", "text": "[image: image/bmp, 2 bytes; not supported here]"},
        *[{"type": "text", "text": text} for text in DESCRIBED],
        {"type": "document", "source": source("application/pdf", "JVBERg==")},
        {"type": "image", "source": source("image/gif", "R0lG")},
        {"type": "text",
         "text": "[file file:///b.bin: application/octet-stream, 3 bytes; not supported here]"},
        {"type": "text", "text": LINK},
        {"type": "text", "text": '{"n": 1}'},
    ]


def test_langchain_takes_every_image_and_file() -> None:
    assert langchain_content(EVERY_KIND) == [
        {"type": "text", "text": "hello"},
        {"type": "image", "base64": "aGVsbG8=", "mime_type": "image/png"},
        {"type": "image", "base64": "aGk=", "mime_type": "image/bmp"},
        *[{"type": "text", "text": text} for text in DESCRIBED],
        {"type": "file", "base64": "JVBERg==", "mime_type": "application/pdf"},
        {"type": "image", "base64": "R0lG", "mime_type": "image/gif"},
        {"type": "file", "base64": "AQID", "mime_type": "application/octet-stream"},
        {"type": "text", "text": LINK},
        {"type": "text", "text": '{"n": 1}'},
    ]


def test_text_only_results_are_strings_and_errors_say_so() -> None:
    plain = result(types.TextContent(type="text", text="a"),
                   types.TextContent(type="text", text="b"))
    assert openai_text(plain) == responses_output(plain) == langchain_content(plain) == "a\nb"
    failed = result(types.TextContent(type="text", text="boom"), error=True)
    assert openai_text(failed) == responses_output(failed) == "Error: boom"
    assert openai_text(result(error=True)) == responses_output(result(error=True)) == "Error"
    assert openai_text(result()) == responses_output(result()) == langchain_content(
        result()) == ""
    assert anthropic_content(result()) == []
    assert responses_output(result(PNG, error=True)) == [
        {"type": "input_text", "text": "Error:"},
        {"type": "input_image", "image_url": "data:image/png;base64,aGVsbG8="}]
    # a BMP alone is no reason for a list: described in the string
    assert responses_output(result(BMP)) == "[image: image/bmp, 2 bytes; not supported here]"


def test_structured_content_is_added_unless_a_text_block_carries_it() -> None:
    same = result(types.TextContent(type="text", text='{"n":  1}'), structured={"n": 1})
    assert openai_text(same) == '{"n":  1}'
    other = result(types.TextContent(type="text", text="not json"),
                   types.TextContent(type="text", text='{"n": 2}'),
                   structured={"n": 1, "\u00e9": "\u00e9"})
    assert openai_text(other) == 'not json\n{"n": 2}\n{"n": 1, "\u00e9": "\u00e9"}'
    assert openai_text(result(structured={})) == "{}"


def test_empty_text_is_left_out_of_block_lists() -> None:
    empty = types.TextContent(type="text", text="")
    assert anthropic_content(result(empty, PNG))[0]["type"] == "image"
    assert len(anthropic_content(result(empty, PNG))) == 1
    assert langchain_content(result(empty, PNG)) == [
        {"type": "image", "base64": "aGVsbG8=", "mime_type": "image/png"}]
    assert responses_output(result(empty, PNG)) == [
        {"type": "input_image", "image_url": "data:image/png;base64,aGVsbG8="}]


def test_labels_are_cleaned_and_cut_and_a_pdf_gets_a_file_name() -> None:
    long_uri = "file:///" + "x" * 300
    (described,) = anthropic_content(result(embedded(long_uri, "AQID", "\x1bapp/x")))
    label = described["text"]
    assert "\x1b" not in label and "app/x, 3 bytes" in label
    assert len(label) < 300 and label.startswith("[file file:///xxx")
    items = responses_output(result(embedded("file:///dir/", "JVBERg==", "application/pdf")))
    assert isinstance(items, list)
    assert items[0]["filename"] == "dir"
    items = responses_output(result(embedded("/", "JVBERg==", "application/pdf")))
    assert isinstance(items, list)
    assert items[0]["filename"] == "file.pdf"
    # base64 padding and surrounding space do not count as bytes
    sizes: List[str] = [openai_text(result(types.AudioContent(
        type="audio", data=data, mime_type="audio/wav"))) for data in (" AA== ", "AAA=", "")]
    assert [s.split(", ")[1].split(" bytes")[0] for s in sizes] == ["1", "2", "0"]


def test_clean_result_takes_invisible_characters_out_of_the_text_it_carries() -> None:
    dirty = result(
        types.TextContent(type="text", text="a\u200bb\x1b"),
        types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
            uri="file:///t", text="c\u202ed")),
        PNG,
        structured={"k\u200b": "v\x07"},
    )
    clean, removed = clean_result(dirty)
    assert removed == 5
    assert clean.content[0].text == "ab"  # type: ignore[union-attr]
    assert clean.content[1].resource.text == "cd"  # type: ignore[union-attr]
    assert clean.content[2] is PNG
    assert clean.structured_content == {"k": "v"}
    assert dirty.content[0].text == "a\u200bb\x1b"  # type: ignore[union-attr]
    tidy = result(types.TextContent(type="text", text="fine"), structured={"a": 1})
    assert clean_result(tidy) == (tidy, 0) and clean_result(tidy)[0] is tidy
    only_structured, removed = clean_result(result(structured={"a": "\u200b"}))
    assert (only_structured.structured_content, removed) == ({"a": ""}, 1)


def test_content_the_client_does_not_know_is_named_not_dropped() -> None:
    # A server may send a content type of a later protocol, or a resource with neither
    # text nor blob: the model hears that something was there.
    unknown = types.CallToolResult.model_validate({"content": [
        {"type": "vid\x1beo", "data": "x"},
        {"type": "resource", "resource": {"uri": "file:///x\u202e"}},
        {"type": "resource", "resource": {"uri": "file:///t", "text": "plain"}},
    ]})
    assert openai_text(unknown).split("\n") == [
        "[content of type 'video'; not shown]", "[resource file:///x; no contents]",
        "[resource file:///t]", "plain"]


def test_a_pdf_file_name_is_the_last_part_of_its_uri_cut_to_100() -> None:
    def filename(uri: str) -> Any:
        items = responses_output(result(embedded(uri, "JVBERg==", "application/pdf")))
        assert isinstance(items, list)
        return items[0]["filename"]

    assert filename("file:///a/b/REPORTX") == "REPORTX"
    assert filename("https://h/d/" + "n" * 150) == "n" * 99 + "\u2026"


def test_clean_result_counts_every_block() -> None:
    blocks = [types.TextContent(type="text", text=f"{n}\u200b") for n in range(3)]
    clean, removed = clean_result(result(*blocks))
    assert removed == 3 and [b.text for b in clean.content] == ["0", "1", "2"]  # type: ignore[union-attr]
