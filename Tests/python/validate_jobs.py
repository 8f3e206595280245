"""Validates AMQP messages against deploy/asyncapi.yaml: each line of the input file is
{"type": "sms", "headers": {...}, "body": "<the raw body>"}; the body must match
components.schemas.<Type>Job and the headers components.schemas.JobHeaders. Prints one line per
problem and exits 1 if there is any."""
import json
import sys

import jsonschema
import yaml


def main():
    document = yaml.safe_load(open(sys.argv[1]))
    root = {"components": document["components"]}
    names = {"sms": "SmsJob", "email": "EmailJob", "push": "PushJob", "apple": "AppleJob"}
    problems = 0
    count = 0
    for line in open(sys.argv[2]):
        message = json.loads(line)
        count += 1
        for part, schema_name, value in [
            ("body", names[message["type"]], json.loads(message["body"])),
            ("headers", "JobHeaders", message["headers"]),
        ]:
            schema = dict(root, **{"$ref": "#/components/schemas/" + schema_name})
            validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
            for error in validator.iter_errors(value):
                problems += 1
                print(f"{message['type']} {part}: {error.message} at {list(error.absolute_path)}")
    print(f"validated {count} messages, {problems} problems")
    sys.exit(1 if problems else 0)


main()
