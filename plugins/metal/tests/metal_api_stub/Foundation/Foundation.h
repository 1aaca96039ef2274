// Test-only declarations of the Foundation API metal_host.mm uses (see ../README.md). Not
// Apple's header: declarations from Apple's documentation, for a syntax check on Linux.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef long NSInteger;
typedef unsigned long NSUInteger;
typedef bool BOOL;  // bool on arm64 Apple platforms
#define YES __objc_yes
#define NO __objc_no
#define nil nullptr

// Foundation's enum macros as they expand in Objective-C++.
#define NS_ENUM(type, name) \
  enum name : type name;     \
  enum name : type
#define NS_OPTIONS(type, name) \
  type name;                   \
  enum : type

@protocol NSObject
@end

@interface NSObject <NSObject>
+ (instancetype)alloc;
+ (instancetype) new;
- (instancetype)init;
@end

@protocol NSCopying
@end

typedef struct {
  unsigned long state;
  __unsafe_unretained id* itemsPtr;
  unsigned long* mutationsPtr;
  unsigned long extra[5];
} NSFastEnumerationState;

@protocol NSFastEnumeration
- (NSUInteger)countByEnumeratingWithState:(NSFastEnumerationState*)state
                                  objects:(__unsafe_unretained id[])buffer
                                    count:(NSUInteger)len;
@end

typedef struct _NSRange {
  NSUInteger location;
  NSUInteger length;
} NSRange;
NSRange NSMakeRange(NSUInteger loc, NSUInteger len);

typedef NSUInteger NSStringEncoding;
enum : NSStringEncoding { NSUTF8StringEncoding = 4 };

@interface NSString : NSObject <NSCopying>
- (instancetype)initWithBytes:(const void*)bytes length:(NSUInteger)len encoding:(NSStringEncoding)encoding;
@property(readonly) const char* UTF8String;
@end

@interface NSArray<__covariant ObjectType> : NSObject <NSCopying, NSFastEnumeration>
@property(readonly) NSUInteger count;
@end

@interface NSError : NSObject <NSCopying>
@property(readonly, copy) NSString* localizedDescription;
@end
