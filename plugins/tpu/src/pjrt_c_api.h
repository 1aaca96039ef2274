// The part of the PJRT C API (XLA's plugin interface, xla/pjrt/c/pjrt_c_api.h) that the tpu
// target calls, declared here from its documented layout so rlx builds without XLA's headers.
//
// The API is versioned: a plugin's PJRT_Api carries its major and minor version, and every
// argument struct starts with struct_size, the size the caller knows. Within major 0 fields are
// only ever appended, so a caller written for an older minor passes its own (smaller) sizes and
// the plugin reads no further. Plugins may also require a struct to be at least as large as their
// own (XLA's 0.115 CPU plugin does for PJRT_Client_Create_Args), so the structs below carry the
// fields appended up to API 0.115, zero-initialised (their "not set" value). What this file
// must get exactly right is therefore the order of the fields it names: the function table below
// lists every slot up to the last one used, the unused ones as placeholders, so their offsets
// match the plugin's.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rlx::tpu::pjrt {

// The version this client was written against; pjrt_client.cpp checks the plugin's.
inline constexpr int kMajor = 0;
// The minor these declarations were checked against (API 0.33); newer minors only append.
inline constexpr int kMinMinor = 33;

extern "C" {

struct Error;
struct Event;
struct Client;
struct Device;
struct Memory;
struct LoadedExecutable;
struct Buffer;

struct ErrorDestroyArgs {
  size_t struct_size;
  void* priv;
  Error* error;
};
struct ErrorMessageArgs {
  size_t struct_size;
  void* priv;
  const Error* error;
  const char* message;  // out, lives as long as `error`
  size_t message_size;  // out
};
struct PluginInitializeArgs {
  size_t struct_size;
  void* priv;
};
struct EventDestroyArgs {
  size_t struct_size;
  void* priv;
  Event* event;
};
struct EventAwaitArgs {
  size_t struct_size;
  void* priv;
  Event* event;
};
enum NamedValueType : int { kString = 0, kInt64, kInt64List, kFloat, kBool };
struct NamedValue {
  size_t struct_size;
  void* priv;
  const char* name;
  size_t name_size;
  NamedValueType type;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_array_value;
    float float_value;
    bool bool_value;
  };
  size_t value_size;  // elements of a list or string, 1 for a scalar
};
struct PluginAttributesArgs {
  size_t struct_size;
  void* priv;
  const NamedValue* attributes;  // out, live as long as the process
  size_t num_attributes;         // out
};
struct ClientCreateArgs {
  size_t struct_size;
  void* priv;
  NamedValue* create_options;
  size_t num_options;
  void* kv_get_callback;
  void* kv_get_user_arg;
  void* kv_put_callback;
  void* kv_put_user_arg;
  Client* client;  // out
  void* kv_try_get_callback;
  void* kv_try_get_user_arg;
};
struct ClientDestroyArgs {
  size_t struct_size;
  void* priv;
  Client* client;
};
struct ClientPlatformNameArgs {
  size_t struct_size;
  void* priv;
  Client* client;
  const char* platform_name;  // out, owned by the client
  size_t platform_name_size;  // out
};
struct ClientAddressableDevicesArgs {
  size_t struct_size;
  void* priv;
  Client* client;
  Device** addressable_devices;  // out, owned by the client
  size_t num_addressable_devices;
};
struct Program {
  size_t struct_size;
  void* priv;
  char* code;
  size_t code_size;
  const char* format;  // "mlir": MLIR text or bytecode
  size_t format_size;
};
struct ClientCompileArgs {
  size_t struct_size;
  void* priv;
  Client* client;
  Program* program;
  const char* compile_options;  // a serialized xla.CompileOptionsProto
  size_t compile_options_size;
  LoadedExecutable* executable;  // out
};

// PJRT_Buffer_Type: the element types, in the API's numbering.
enum BufferType : int {
  kInvalid = 0,
  kPred,
  kS8,
  kS16,
  kS32,
  kS64,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kF32,
  kF64,
  kBF16,
  kC64,
  kC128,
};
enum HostBufferSemantics : int {
  kImmutableOnlyDuringCall = 0,
  kImmutableUntilTransferCompletes = 1,
  kImmutableZeroCopy = 2,
};
struct ClientBufferFromHostBufferArgs {
  size_t struct_size;
  void* priv;
  Client* client;
  const void* data;
  BufferType type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides;  // null: dense, row-major
  size_t num_byte_strides;
  HostBufferSemantics host_buffer_semantics;
  Device* device;
  Memory* memory;                // null: the device's default memory
  void* device_layout;           // null: dense, row-major
  Event* done_with_host_buffer;  // out
  Buffer* buffer;                // out
};
struct LoadedExecutableDestroyArgs {
  size_t struct_size;
  void* priv;
  LoadedExecutable* executable;
};
struct ExecuteOptions {
  size_t struct_size;
  void* priv;
  void* send_callbacks;
  void* recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  void* context;
  const char* call_location;
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
  void* multi_slice_config;
};
struct LoadedExecutableExecuteArgs {
  size_t struct_size;
  void* priv;
  LoadedExecutable* executable;
  ExecuteOptions* options;
  Buffer* const* const* argument_lists;  // [num_devices][num_args]
  size_t num_devices;
  size_t num_args;
  Buffer** const* output_lists;    // [num_devices][num_outputs], filled by the plugin
  Event** device_complete_events;  // [num_devices], out
  Device* execute_device;          // null: the devices it was compiled for
};
struct BufferDestroyArgs {
  size_t struct_size;
  void* priv;
  Buffer* buffer;
};
struct BufferToHostBufferArgs {
  size_t struct_size;
  void* priv;
  Buffer* src;
  void* host_layout;  // null: the buffer's own (row-major for what we compile)
  void* dst;
  size_t dst_size;
  Event* event;  // out
};

using ErrorDestroyFn = void(ErrorDestroyArgs*);
using ErrorMessageFn = void(ErrorMessageArgs*);
}  // extern "C"

// Every other function takes its argument struct and returns an error or null.
template <typename Args>
using Fn = Error*(Args*);

extern "C" {
// PJRT_Api up to PJRT_Buffer_ToHostBuffer, slot by slot.
struct Api {
  size_t struct_size;
  void* extension_start;
  struct {
    size_t struct_size;
    void* priv;
    int major_version;
    int minor_version;
  } version;
  ErrorDestroyFn* error_destroy;
  ErrorMessageFn* error_message;
  void* error_get_code;
  Fn<PluginInitializeArgs>* plugin_initialize;
  Fn<PluginAttributesArgs>* plugin_attributes;
  Fn<EventDestroyArgs>* event_destroy;
  void* event_is_ready;
  void* event_error;
  Fn<EventAwaitArgs>* event_await;
  void* event_on_ready;
  Fn<ClientCreateArgs>* client_create;
  Fn<ClientDestroyArgs>* client_destroy;
  Fn<ClientPlatformNameArgs>* client_platform_name;
  void* client_process_index;
  void* client_platform_version;
  void* client_devices;
  Fn<ClientAddressableDevicesArgs>* client_addressable_devices;
  void* client_lookup_device;
  void* client_lookup_addressable_device;
  void* client_addressable_memories;
  Fn<ClientCompileArgs>* client_compile;
  void* client_default_device_assignment;
  Fn<ClientBufferFromHostBufferArgs>* client_buffer_from_host_buffer;
  void* device_description[6];  // Id, ProcessIndex, Attributes, Kind, DebugString, ToString
  void* device[6];       // GetDescription, IsAddressable, LocalHardwareId, AddressableMemories,
                         // DefaultMemory, MemoryStats
  void* memory[5];       // Id, Kind, DebugString, ToString, AddressableByDevices
  void* executable[10];  // Destroy, Name, NumReplicas, NumPartitions, NumOutputs,
                         // SizeOfGeneratedCodeInBytes, GetCostAnalysis, OutputMemoryKinds,
                         // OptimizedProgram, Serialize
  Fn<LoadedExecutableDestroyArgs>* loaded_executable_destroy;
  void* loaded_executable_get_executable;
  void* loaded_executable_addressable_devices;
  void* loaded_executable_delete;
  void* loaded_executable_is_deleted;
  Fn<LoadedExecutableExecuteArgs>* loaded_executable_execute;
  void* executable_deserialize_and_load;
  void* loaded_executable_fingerprint;
  Fn<BufferDestroyArgs>* buffer_destroy;
  void* buffer_element_type;
  void* buffer_dimensions;
  void* buffer_unpadded_dimensions;
  void* buffer_dynamic_dimension_indices;
  void* buffer_get_memory_layout;
  void* buffer_on_device_size_in_bytes;
  void* buffer_device;
  void* buffer_memory;
  void* buffer_delete;
  void* buffer_is_deleted;
  void* buffer_copy_to_device;
  Fn<BufferToHostBufferArgs>* buffer_to_host_buffer;
};

using GetPjrtApiFn = const Api*();

}  // extern "C"

}  // namespace rlx::tpu::pjrt

// An argument struct's size as this client knows it: up to and including its last field, without
// trailing padding (the API's PJRT_STRUCT_SIZE), so a newer plugin never takes padding for a
// field it appended.
#define RLX_PJRT_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(static_cast<type*>(nullptr)->last_field))
