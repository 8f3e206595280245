"""Phone numbers as the phonenumbers package (libphonenumber's metadata) reads them, one JSON object
per line: every supported region's example numbers in E.164, and each again typed with the region's
national trunk prefix after the calling code ("+49 0151..."), with the E.164 form phonenumbers parses
that to (null when it finds the number invalid)."""

import json

import phonenumbers
from phonenumbers import PhoneMetadata, PhoneNumberFormat, PhoneNumberType

TYPES = {
    "mobile": PhoneNumberType.MOBILE,
    "fixed": PhoneNumberType.FIXED_LINE,
    "tollFree": PhoneNumberType.TOLL_FREE,
}


def e164(number):
    return phonenumbers.format_number(number, PhoneNumberFormat.E164)


def read(text):
    try:
        number = phonenumbers.parse(text, None)
    except phonenumbers.NumberParseException:
        return None
    return e164(number) if phonenumbers.is_valid_number(number) else None


seen = set()
for region in sorted(phonenumbers.SUPPORTED_REGIONS):
    metadata = PhoneMetadata.metadata_for_region(region)
    for kind, number_type in TYPES.items():
        example = phonenumbers.example_number_for_type(region, number_type)
        if example is None or not phonenumbers.is_valid_number(example):
            continue
        canonical = e164(example)
        national = phonenumbers.national_significant_number(example)
        rows = [("e164", canonical, canonical)]
        if metadata.national_prefix:
            typed = "+%d %s%s" % (example.country_code, metadata.national_prefix, national)
            rows.append(("trunk", typed, read(typed)))
        for form, text, expected in rows:
            if text in seen:
                continue
            seen.add(text)
            print(json.dumps({"region": region, "type": kind, "form": form, "input": text, "expected": expected}))
