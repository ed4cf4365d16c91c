"""Decodes a gzipped pprof profile with the protobuf library, against the
message types of pprof's profile.proto (the fields `jaxpr stats` writes),
and prints it as JSON: sample types, and each sample's stack (function
names, leaf first) and values.

usage: python decode_pprof.py PROFILE.pb.gz
"""
import gzip, json, sys
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def message(file, name, fields):
    m = file.message_type.add(name=name)
    for number, (field, kind, label, type_name) in enumerate(fields, 1):
        if field is None:
            continue
        f = m.field.add(name=field, number=number, type=kind, label=label)
        if type_name:
            f.type_name = type_name


def profile_type():
    file = descriptor_pb2.FileDescriptorProto(name="profile.proto", package="perftools.profiles", syntax="proto3")
    one, many = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    message(file, "ValueType", [("type", F.TYPE_INT64, one, None), ("unit", F.TYPE_INT64, one, None)])
    message(file, "Sample", [("location_id", F.TYPE_UINT64, many, None), ("value", F.TYPE_INT64, many, None)])
    message(file, "Line", [("function_id", F.TYPE_UINT64, one, None), ("line", F.TYPE_INT64, one, None)])
    message(file, "Location", [("id", F.TYPE_UINT64, one, None), ("mapping_id", F.TYPE_UINT64, one, None),
                               ("address", F.TYPE_UINT64, one, None),
                               ("line", F.TYPE_MESSAGE, many, ".perftools.profiles.Line")])
    message(file, "Function", [("id", F.TYPE_UINT64, one, None), ("name", F.TYPE_INT64, one, None),
                               ("system_name", F.TYPE_INT64, one, None), ("filename", F.TYPE_INT64, one, None),
                               ("start_line", F.TYPE_INT64, one, None)])
    message(file, "Profile", [("sample_type", F.TYPE_MESSAGE, many, ".perftools.profiles.ValueType"),
                              ("sample", F.TYPE_MESSAGE, many, ".perftools.profiles.Sample"),
                              (None, None, None, None),
                              ("location", F.TYPE_MESSAGE, many, ".perftools.profiles.Location"),
                              ("function", F.TYPE_MESSAGE, many, ".perftools.profiles.Function"),
                              ("string_table", F.TYPE_STRING, many, None)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("perftools.profiles.Profile"))


def main():
    with open(sys.argv[1], "rb") as fh:
        data = gzip.decompress(fh.read())
    profile = profile_type()()
    profile.ParseFromString(data)
    strings = list(profile.string_table)
    assert strings[0] == "", "string_table[0] must be empty"
    functions = {f.id: strings[f.name] for f in profile.function}
    locations = {l.id: functions[l.line[0].function_id] for l in profile.location}
    print(json.dumps({
        "sample_types": [strings[t.type] for t in profile.sample_type],
        "samples": [{"stack": [locations[i] for i in s.location_id], "values": list(s.value)}
                    for s in profile.sample],
    }))


if __name__ == "__main__":
    main()
