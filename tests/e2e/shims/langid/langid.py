"""Stand-in (README.md) for langid.langid: processor.detect_language classifies
each transcript among the recipe's limited_langs. This one answers 'zh' when
the text has a CJK character, else 'en' (or the first allowed language)."""

model = None


class LanguageIdentifier:
    def __init__(self):
        self.langs = ["zh", "en"]

    @classmethod
    def from_modelstring(cls, string, norm_probs=False):
        return cls()

    def set_languages(self, langs=None):
        self.langs = list(langs or ["zh", "en"])

    def classify(self, text):
        cjk = any("\u4e00" <= ch <= "\u9fff" for ch in text)
        lang = "zh" if cjk else "en"
        return (lang if lang in self.langs else self.langs[0]), 1.0
