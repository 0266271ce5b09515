"""Instruction text of each request (the user's words after the audio): ASR, translation, spoken QA.

The paper (D.1.2) gives the Omni translation and spoken-QA cohorts but does not print its prompt
text; these are this workbench's, fixed here so every method of a comparison gets the same request.
The audio comes first in the user turn (``models.prompts``), so the retained audio state never
depends on these words.
"""

from __future__ import annotations

ASR_INSTRUCTION = "Transcribe the speech."
LANGUAGE_NAMES = {"en": "English", "zh": "Chinese", "de": "German", "fr": "French", "es": "Spanish",
                  "ja": "Japanese"}
TRANSLATION_INSTRUCTION = "Translate the speech into {language}. Output only the translation."
QA_INSTRUCTION = "Answer the question about the speech with a short phrase.\nQuestion: {question}"


def task_instruction(task: str, *, target_language: str | None = None, question: str | None = None) -> str:
    """The instruction of one request: ASR, translation into ``target_language``, or the QA question."""
    if task == "asr":
        return ASR_INSTRUCTION
    if task == "translation":
        if target_language not in LANGUAGE_NAMES:
            raise ValueError(f"translation needs a target language among {sorted(LANGUAGE_NAMES)}, "
                             f"got {target_language!r}")
        return TRANSLATION_INSTRUCTION.format(language=LANGUAGE_NAMES[target_language])
    if task == "qa":
        if not question or not question.strip():
            raise ValueError("a spoken-QA request needs its question text")
        return QA_INSTRUCTION.format(question=question.strip())
    raise ValueError(f"unknown task {task!r}; choose asr, translation or qa")
