"""README.md dataset card of a published selection, written from its manifest, that `datasets` loads as one split."""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath

from huggingface_hub import DatasetCard, DatasetCardData

from capsel.methods.registry import method
from capsel.publish.data_files import PARQUET_FILE
from capsel.publish.funnel import funnel_rows
from capsel.safe_text import markdown_text, visible

# The Hub's size_categories buckets, in order: the first whose bound exceeds the row count (n<1K under 10³).
SIZE_BUCKETS = ("n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M", "100M<n<1B",
                "1B<n<10B", "10B<n<100B", "100B<n<1T")
# Without configs, `datasets` infers the builder from the folder's files and reads gate/'s and report/'s
# images as an ImageFolder; this names data.parquet as the one split.
CONFIGS = [{"config_name": "default", "data_files": [{"split": "train", "path": PARQUET_FILE}]}]


def dataset_card(manifest: dict) -> str:
    """Markdown card: Hub metadata, then what was selected, how, from where, and how to train on it."""
    name = manifest["selection_id"]
    data = DatasetCardData(
        pretty_name=name,
        license=manifest["license"],
        language=["en"],
        size_categories=[size_category(manifest["n_members"])],
        # a selection with pictures trains a model that reads them: the Hub's task for that
        task_categories=["text-generation", *(["image-text-to-text"] if manifest.get("images") else [])],
        tags=["capsel", "sft", "data-selection", manifest["method"]],
        source_datasets=[source_label(source) for source in manifest["sources"]],
        configs=CONFIGS,
    )
    # DatasetCardData dumps the YAML (quoting whatever a source name holds); DatasetCard parses it back as a check
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(_body(manifest))))


def size_category(n_rows: int) -> str:
    """The Hub's size_categories bucket of `n_rows` examples."""
    for power, bucket in enumerate(SIZE_BUCKETS, start=3):
        if n_rows < 10**power:
            return bucket
    return "n>1T"


def source_label(source: dict) -> str:
    """A source file by its own name and sha256: its local path would publish the publisher's directories.

    Control characters in the name are written out: YAML would keep a bidi override raw in the card's header.
    """
    name = visible(_file_name(source["path"]))
    return f"{name} (sha256 {source['sha256']})" if source.get("sha256") else name


def model_label(model: dict) -> str:
    """The scoring model by its folder name (a hub id or installed name as given) and fingerprint."""
    path = model.get("name_or_path")
    fingerprint = model.get("fingerprint")
    if not path:
        return f"`{fingerprint}`" if fingerprint else "none (nothing was scored)"
    local = path.startswith(("/", "~", ".", "file:")) or PureWindowsPath(path).is_absolute()
    return f"{markdown_text(_file_name(path) if local else path)}, fingerprint `{fingerprint}`"


def _body(manifest: dict) -> list[str]:
    name = manifest["selection_id"]
    model = manifest["model"]
    seed = f", seed {manifest['seed']}" if method(manifest["method"]).selector.seeded else ""
    return [
        f"# {name}",
        "",
        f"{manifest['n_members']} supervised fine-tuning examples selected by capsel with method "
        f"`{manifest['method']}` (budget `{manifest['budget']}`, {manifest['budget_mode'].replace('_', ' ')}{seed}) "
        f"from {markdown_text(manifest['pool'])}.",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'train = load_dataset("path/to/{name}", split="train")  # data.parquet',
        "```",
        "",
        f"Licence: `{manifest['license']}`"
        + (" (capsel does not know the sources' licence; set it with `capsel select --license`)."
           if manifest["license"] == "other" else "."),
        "",
        "## Files",
        "",
        *_data_file_lines(manifest.get("images")),
        "- `dataset_info.json`: the LlamaFactory entry; point `dataset_dir` at this folder and use "
        f"`dataset: {name}`.",
        "- `excluded.parquet`: every row of the pool that is not a member, with the stage and reason it left.",
        "- `manifest.json`: ids, model, scoring config, per-domain fits, source files with sha256, code version.",
        "- `report/index.html`: per-domain plots; `gate/index.html` (and `gate/validation.json`): the data-quality "
        "checks it passed.",
        "",
        "## Scoring",
        "",
        f"- model: {model_label(model)} (dtype {markdown_text(model.get('dtype') or 'unknown')})",
        f"- scoring config: `{manifest['scoring_config']['config_hash']}`",
        f"- selection rule: {markdown_text(manifest['selection_rule'])}",
        "",
        "## Domains",
        "",
        *_table(("domain", "candidates", "excluded", "pool", "budget k", "members", "α", "β", "r²", "cut z"),
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
                ([markdown_text(d["domain"]), d["n_candidates"], d["n_excluded"], d["size"], d["k"],
                  d["n_members"],
                  _num(d.get("alpha")), _num(d.get("beta")), _num(d.get("r2")), _num(d.get("z_cut"))]
                 for d in manifest["domains"])),
        "",
        *([f"- {markdown_text(note)}" for note in manifest["notes"]] + [""] if manifest["notes"] else []),
        "## Funnel",
        "",
        "Rows read, what each stage dropped (`excluded.parquet` lists them) and what was left.",
        "",
        *_table(("stage", "rows", "left", "reasons"), "|---|---:|---:|---|",
                ([markdown_text(cell) for cell in row] for row in funnel_rows(manifest["funnel"]))),
        "",
        "## Sources",
        "",
        *_table(("source", "sha256", "members"), "|---|---|---:|",
                ([markdown_text(_file_name(s["path"])), f"`{s['sha256']}`", s["n_members"]]
                 for s in manifest["sources"])),
        "",
        "## Provenance",
        "",
        f"- created {manifest['created_at']} by capsel {manifest['code_version']}, run `{manifest['run_id']}`",
        f"- members sha256: `{manifest['members_sha256']}`",
        "",
    ]


def _data_file_lines(images: dict | None) -> list[str]:
    if images is None:
        return [
            "- `data.jsonl`: alpaca format, one object per line with exactly `instruction`, `input`, `output`.",
            "- `data.parquet`: the same rows with lineage (`candidate_id`, `source_id`, `source_row`) and scores "
            "(`score` of the method, CAP's `d_early`, `d_late`, `cap`, `z`, `rank` within the domain); the `train` "
            "split.",
        ]
    return [
        "- `data.jsonl`: alpaca format with images, one object per line with exactly `instruction`, `input`, "
        "`output`, `images` (the row's image files, relative to this folder, in the order of the `<image>` "
        "placeholders in `instruction`; `[]` for a text-only row).",
        "- `data.parquet`: the same rows with lineage (`candidate_id`, `source_id`, `source_row`), scores "
        "(`score` of the method, CAP's `d_early`, `d_late`, `cap`, `z`, `rank` within the domain) and `images`; "
        "the `train` split.",
        f"- `{images['folder']}`: the {images['count']} images the rows use ({images['n_bytes']} bytes), each "
        "once, named by the sha256 of its bytes.",
    ]


def _table(header: tuple[str, ...], rule: str, rows) -> list[str]:
    return [_row(header), rule, *(_row(row) for row in rows)]


def _row(cells) -> str:
    # cells arrive as Markdown: data went through markdown_text, which also keeps a | from breaking the row
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def _num(value: object) -> str:
    return "" if value is None else f"{value:.4g}"


def _file_name(path: str) -> str:
    # local paths, file:// and s3:// URLs alike end in the file's own name
    return PurePosixPath(path.replace("\\", "/").rstrip("/")).name or path
