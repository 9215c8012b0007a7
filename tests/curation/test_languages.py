"""`languages` and `filter_languages` take lid.176's codes: the table of them is the model's, and a language's
name, an ISO 639-2 code or a regional tag is answered with the code it means."""

import pytest

from curation.languages import LID_LANGUAGES, suggest_language, unknown_language


def test_the_codes_are_the_labels_of_the_model_that_identifies_languages():
    from curation.fasttext_model import load_fasttext
    from curation.steps.langid import lid_model_path

    labels = {label.removeprefix("__label__") for label in load_fasttext(str(lid_model_path())).get_labels()}
    assert set(LID_LANGUAGES) == labels and len(labels) == 176


@pytest.mark.parametrize("value, code", [
    ("english", "en"), ("German", "de"), ("Deutsch", "de"), ("eng", "en"), ("en-US", "en"), ("pt_BR", "pt"),
    ("englsh", "en"), ("EN", "en"), ("Alemannic", "als"), ("farsi", "fa"),
    ("xx", None), ("Klingon", None), ("germna", None),
])
def test_a_name_or_a_near_miss_suggests_the_code_it_means(value, code):
    assert suggest_language(value) == code
    line = unknown_language(value)
    assert f"'{value}' is not a lid.176 language code" in line
    assert (f'did you mean "{code}"' in line) if code else ("https://fasttext.cc/" in line)
